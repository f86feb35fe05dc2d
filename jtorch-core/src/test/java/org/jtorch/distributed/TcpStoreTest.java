package org.jtorch.distributed;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** The rendezvous store's contract (c10d's TCPStore semantics): values, counters, waits and timeouts. */
class TcpStoreTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(10);

    @Test
    void aValueSetByOneClientIsReadByAnother() {
        try (TcpStore server = new TcpStore("127.0.0.1", 0, true, TIMEOUT);
                TcpStore client = new TcpStore("127.0.0.1", server.port(), false, TIMEOUT)) {
            server.set("addr", new byte[] {1, 2, 3});
            assertArrayEquals(new byte[] {1, 2, 3}, client.get("addr"));
            client.set("name", "rank1");
            assertEquals("rank1", server.getString("name"));
            assertEquals(2, client.numKeys());
            assertTrue(client.check(List.of("addr", "name")));
            assertTrue(client.deleteKey("addr"));
            assertFalse(client.check(List.of("addr", "name")));
        }
    }

    @Test
    void getWaitsForAKeyThatAnotherProcessSetsLater() throws Exception {
        try (TcpStore server = new TcpStore("127.0.0.1", 0, true, TIMEOUT);
                TcpStore client = new TcpStore("127.0.0.1", server.port(), false, TIMEOUT)) {
            CompletableFuture<String> got = CompletableFuture.supplyAsync(() -> client.getString("late"));
            Thread.sleep(200);
            assertFalse(got.isDone());
            server.set("late", "here");
            assertEquals("here", got.get());
        }
    }

    @Test
    void addCountsEveryClientsIncrements() throws Exception {
        try (TcpStore server = new TcpStore("127.0.0.1", 0, true, TIMEOUT)) {
            List<CompletableFuture<Void>> clients = new ArrayList<>();
            for (int c = 0; c < 4; c++) {
                clients.add(CompletableFuture.runAsync(() -> {
                    try (TcpStore s = new TcpStore("127.0.0.1", server.port(), false, TIMEOUT)) {
                        for (int k = 0; k < 25; k++) s.add("count", 1);
                    }
                }));
            }
            for (CompletableFuture<Void> c : clients) c.get();
            assertEquals(100, server.add("count", 0));
            assertEquals("100", server.getString("count")); // a decimal string, as c10d
        }
    }

    @Test
    void waitingForAKeyNobodySetsTimesOutNamingIt() {
        try (TcpStore server = new TcpStore("127.0.0.1", 0, true, Duration.ofMillis(300))) {
            long start = System.nanoTime();
            DistributedException e = assertThrows(DistributedException.class, () -> server.get("never"));
            assertTrue(e.getMessage().contains("TcpStore.get: timed out after 300 ms waiting for key(s) never"), e.getMessage());
            assertTrue((System.nanoTime() - start) / 1e9 < 5);
            e = assertThrows(DistributedException.class, () -> server.waitFor(List.of("a", "b"), Duration.ofMillis(100)));
            assertTrue(e.getMessage().contains("waiting for key(s) a, b"), e.getMessage());
        }
    }

    @Test
    void aClientStartedBeforeTheServerConnectsOnceItIsUp() throws Exception {
        int port;
        try (TcpStore probe = new TcpStore("127.0.0.1", 0, true, TIMEOUT)) {
            port = probe.port(); // a port that was free a moment ago
        }
        CompletableFuture<String> early = CompletableFuture.supplyAsync(() -> {
            try (TcpStore c = new TcpStore("127.0.0.1", port, false, TIMEOUT)) {
                return c.getString("ready");
            }
        });
        Thread.sleep(300);
        try (TcpStore server = new TcpStore("127.0.0.1", port, true, TIMEOUT)) {
            server.set("ready", "yes");
            assertEquals("yes", early.get());
        }
    }

    @Test
    void aClientWhoseServerIsGoneFailsNamingTheStore() {
        TcpStore server = new TcpStore("127.0.0.1", 0, true, TIMEOUT);
        try (TcpStore client = new TcpStore("127.0.0.1", server.port(), false, TIMEOUT)) {
            server.close();
            DistributedException e = assertThrows(DistributedException.class, () -> client.get("x"));
            assertTrue(e.getMessage().contains("the connection to the store at 127.0.0.1:"), e.getMessage());
        }
    }

    @Test
    void noServerAtAllIsAnErrorWithinTheTimeout() {
        DistributedException e = assertThrows(DistributedException.class, () -> new TcpStore("127.0.0.1", 1, false, Duration.ofMillis(300)));
        assertTrue(e.getMessage().contains("could not connect to 127.0.0.1:1 within 300 ms"), e.getMessage());
    }

    /** A launcher run again at once serves on the same port: close() has released it when it returns. */
    @Test
    void aClosedServersPortCanBeServedAgainAtOnce() {
        TcpStore first = new TcpStore("127.0.0.1", 0, true, TIMEOUT);
        int port = first.port();
        for (int i = 0; i < 20; i++) {
            first.close();
            first = new TcpStore("127.0.0.1", port, true, TIMEOUT);
        }
        first.close();
    }
}
