package org.jtorch.vision.models;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.InputStreamReader;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.autograd.Grad;
import org.jtorch.io.SafeTensors;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.BatchNorm2d;
import org.jtorch.nn.Conv2d;
import org.jtorch.nn.Module;
import org.jtorch.nn.Sequential;
import org.jtorch.testing.Fixtures;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The models against PyTorch 1.13 / torchvision 0.14 ({@code tools/fixtures/gen_vision_models.py}):
 * state-dict keys, order and shapes as torchvision's resnet18/34/50 (and the script's reference LeNet5
 * and CIFAR ResNets), parameter counts, and forward outputs in eval and train mode, the running
 * statistics a train-mode forward leaves and the gradients of a weighted sum of its output, for LeNet5,
 * ResNet-20 and torchvision's strided BasicBlock and Bottleneck, with PyTorch's weights.
 */
class ModelsTest {

    private static JsonObject structures() {
        try (var in = ModelsTest.class.getResourceAsStream("/fixtures/vision_models.json")) {
            return JsonParser.parseReader(new InputStreamReader(in, StandardCharsets.UTF_8)).getAsJsonObject().getAsJsonObject("models");
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Module build(String name) {
        return switch (name) {
            case "resnet18" -> ResNet.resnet18();   // torchvision's defaults: 1,000 classes, 3 channels
            case "resnet34" -> ResNet.resnet34();
            case "resnet50" -> ResNet.resnet50();
            case "resnet18_10_classes" -> ResNet.resnet18(10, 3);
            case "resnet50_1_channel_7_classes" -> ResNet.resnet50(7, 1);
            case "basic_block" -> new ResNet.BasicBlock(16, 32, 2, new Sequential(
                    new Conv2d(16, 32, 1, Conv2d.options().stride(2).bias(false)), new BatchNorm2d(32)));
            case "bottleneck" -> new ResNet.Bottleneck(32, 16, 2, new Sequential(
                    new Conv2d(32, 64, 1, Conv2d.options().stride(2).bias(false)), new BatchNorm2d(64)));
            default -> Models.create(name, 10, name.startsWith("lenet") ? 1 : 3);
        };
    }

    @TestFactory
    Stream<DynamicTest> stateDictKeysAndShapesAreTorchvisions() {
        JsonObject models = structures();
        return models.keySet().stream().map(name -> DynamicTest.dynamicTest(name, () -> {
            checkStructure(name, models.getAsJsonObject(name), build(name));
        }));
    }

    private static void checkStructure(String name, JsonObject ref, Module model) {
        try (model) {
            Map<String, Tensor> sd = model.stateDict();
            List<String> keys = new ArrayList<>();
            for (JsonElement k : ref.getAsJsonArray("keys")) keys.add(k.getAsString());
            assertEquals(keys, new ArrayList<>(sd.keySet()), name + ": state-dict keys");
            JsonArray shapes = ref.getAsJsonArray("shapes");
            for (int i = 0; i < keys.size(); i++) {
                long[] expected = shapes.get(i).getAsJsonArray().asList().stream().mapToLong(JsonElement::getAsLong).toArray();
                assertArrayEquals(expected, sd.get(keys.get(i)).shape(), name + ": shape of " + keys.get(i));
            }
            long params = model.parameters().stream().mapToLong(Tensor::numel).sum();
            assertEquals(ref.get("params").getAsLong(), params, name + ": parameter count");
        }
    }

    @Test
    void parameterCountsAreThePublishedOnes() {
        try (Module r18 = ResNet.resnet18(); Module r50 = ResNet.resnet50()) {
            assertEquals(11_689_512L, r18.parameters().stream().mapToLong(Tensor::numel).sum());
            assertEquals(25_557_032L, r50.parameters().stream().mapToLong(Tensor::numel).sum());
        }
    }

    @Test
    void resNetInitialisationIsTorchvisions() {
        try (ResNet r = ResNet.resnet18(10, 3)) {
            Map<String, Tensor> p = r.stateDict();
            // kaiming_normal_(fan_out, relu): std = sqrt(2 / (64 * 7 * 7))
            try (Tensor w = p.get("conv1.weight"); Tensor sd = w.std()) {
                assertEquals(Math.sqrt(2.0 / (64 * 49)), sd.item(), 0.05 * Math.sqrt(2.0 / (64 * 49)));
            }
            assertTrue(allEqual(p.get("layer2.0.downsample.1.weight"), 1) && allEqual(p.get("bn1.bias"), 0));
        }
    }

    private static boolean allEqual(Tensor t, double v) {
        for (double x : t.toDoubleArray()) if (x != v) return false;
        return true;
    }

    @TestFactory
    Stream<DynamicTest> forwardAndBackwardMatchPyTorchWithItsWeights() {
        return Stream.of("lenet5", "resnet20", "basic_block", "bottleneck").map(name -> DynamicTest.dynamicTest(name, () -> checkForward(name)));
    }

    private static void checkForward(String name) throws Exception {
        Map<String, Tensor> ref = SafeTensors.loadCopy(resource("/fixtures/vision_models/" + name + ".safetensors"));
        try (Module model = build(name); MemoryScope scope = new MemoryScope()) {
            Map<String, Tensor> weights = new LinkedHashMap<>();
            for (String k : model.stateDict().keySet()) weights.put(k, ref.get(k));
            model.loadStateDict(weights);
            Tensor x = ref.get("x");
            try (var noGrad = Grad.noGrad()) {
                model.eval();
                Fixtures.assertClose(ref.get("eval_out"), model.forward(x), 1e-4, 1e-5, name + " eval");
            }
            model.train();
            x.requiresGrad_(true);
            Tensor out = model.forward(x);
            Fixtures.assertClose(ref.get("train_out"), out, 1e-4, 1e-5, name + " train");
            out.mul(ref.get("loss_weights")).sum().backward();
            Map<String, Tensor> params = model.namedParameters();
            int grads = 0;
            for (Map.Entry<String, Tensor> e : ref.entrySet()) {
                if (!e.getKey().startsWith("grad.")) continue;
                String key = e.getKey().substring("grad.".length());
                Tensor g = key.equals("x") ? x.grad() : params.get(key).grad();
                Fixtures.assertClose(e.getValue(), g, 1e-3, 1e-5, name + " gradient of " + key);
                grads++;
            }
            assertTrue(grads >= 5, name + ": gradients checked " + grads);
            Map<String, Tensor> after = model.stateDict();
            long statistics = after.keySet().stream().filter(k -> k.endsWith("running_mean") || k.endsWith("running_var") || k.endsWith("num_batches_tracked")).count();
            int checked = 0;
            for (Map.Entry<String, Tensor> e : ref.entrySet()) {
                if (!e.getKey().startsWith("after_train.")) continue;
                String key = e.getKey().substring("after_train.".length());
                Fixtures.assertClose(e.getValue(), after.get(key), 1e-4, 1e-6, name + " " + key + " after a train-mode forward");
                checked++;
            }
            assertEquals(statistics, checked, name + ": running statistics checked");
        } finally {
            ref.values().forEach(Tensor::close);
        }
    }

    private static Path resource(String path) throws URISyntaxException {
        return Path.of(ModelsTest.class.getResource(path).toURI());
    }

    @Test
    void unknownModelNamesListTheKnownOnes() {
        var e = assertThrows(IllegalArgumentException.class, () -> Models.create("vgg16", 10, 3));
        assertTrue(e.getMessage().contains("resnet20"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new CifarResNet(21, 10, 3));
    }
}
