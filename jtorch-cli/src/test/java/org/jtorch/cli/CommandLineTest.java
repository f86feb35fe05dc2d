package org.jtorch.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class CommandLineTest {
    private static CommandLine cl() {
        return new CommandLine("train", "Trains a model.")
                .option("epochs", "N", "3", "passes over the data")
                .option("lr", "RATE", null, "learning rate")
                .option("model", "NAME", "lenet", "the model")
                .flag("pin-memory", "pin host memory");
    }

    @Test
    void parsesValuesBothWaysFlagsAndDefaults() {
        CommandLine c = cl();
        assertTrue(c.parse(new String[] {"--epochs", "5", "--lr=0.1", "--pin-memory"}));
        assertEquals(5, c.getInt("epochs"));
        assertEquals(0.1, c.getDouble("lr"));
        assertTrue(c.flag("pin-memory"));
        assertEquals("lenet", c.get("model"));
        assertFalse(c.given("model"));
        assertNull(cl().get("lr"));
    }

    @Test
    void mistakesAreUsageErrorsThatSayWhatIsWrong() {
        assertEquals("unknown option '--epoch'", assertThrows(CommandLine.UsageException.class,
                () -> cl().parse(new String[] {"--epoch", "3"})).getMessage());
        assertEquals("option '--lr' needs a value (RATE)", assertThrows(CommandLine.UsageException.class,
                () -> cl().parse(new String[] {"--lr"})).getMessage());
        CommandLine c = cl();
        c.parse(new String[] {"--epochs", "many", "--model", "vgg"});
        assertEquals("option '--epochs' needs an integer, got 'many'",
                assertThrows(CommandLine.UsageException.class, () -> c.getInt("epochs")).getMessage());
        assertEquals("option '--model' must be one of lenet, mlp; got 'vgg'",
                assertThrows(CommandLine.UsageException.class, () -> c.choice("model", List.of("lenet", "mlp"))).getMessage());
    }

    @Test
    void usageListsEveryOptionWithItsDefault() {
        String u = cl().usage();
        assertTrue(u.startsWith("usage: jtorch train [options]\n\nTrains a model."), u);
        assertTrue(u.contains("--epochs N    passes over the data (default: 3)"), u);
        assertTrue(u.contains("--pin-memory  pin host memory"), u);
        assertTrue(u.contains("--help"), u);
    }
}
