package org.jtorch;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.jtorch.ops.TypePromotion;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * {@link DType#promote} and {@link TypePromotion} equal PyTorch 1.13's {@code torch.promote_types} and
 * {@code torch.result_type} for every dtype pair, with each operand a tensor with dimensions, a 0-d
 * tensor, or a Python int / float / bool scalar (fixture {@code type_promotion.json} from
 * {@code tools/fixtures/gen_elementwise.py}).
 */
class TypePromotionPropertyTest {
    private static JsonObject table() throws Exception {
        try (var in = TypePromotionPropertyTest.class.getResourceAsStream("/fixtures/type_promotion.json")) {
            return JsonParser.parseReader(new InputStreamReader(in, StandardCharsets.UTF_8)).getAsJsonObject();
        }
    }

    private static Tensor dimTensor(DType d) {
        return Torch.zeros(new long[] {2}, d, Device.cpu());
    }

    private static Tensor zeroDim(DType d) {
        return Torch.zeros(new long[0], d, Device.cpu());
    }

    private static DType dt(JsonObject row, String key) {
        return DType.parse(row.get(key).getAsString());
    }

    @TestFactory
    Stream<DynamicTest> pairsMatchPyTorch() throws Exception {
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonElement e : table().getAsJsonArray("pairs")) {
            JsonObject row = e.getAsJsonObject();
            DType a = dt(row, "a");
            DType b = dt(row, "b");
            tests.add(DynamicTest.dynamicTest(a.pyName() + "+" + b.pyName(), () -> {
                assertEquals(dt(row, "promote_types"), DType.promote(a, b), "promote_types");
                try (Tensor ta = dimTensor(a); Tensor tb = dimTensor(b); Tensor za = zeroDim(a); Tensor zb = zeroDim(b)) {
                    assertEquals(dt(row, "dim_dim"), TypePromotion.resultType(ta, tb), "tensor, tensor");
                    assertEquals(dt(row, "dim_0d"), TypePromotion.resultType(ta, zb), "tensor, 0-d");
                    assertEquals(dt(row, "0d_dim"), TypePromotion.resultType(za, tb), "0-d, tensor");
                    assertEquals(dt(row, "0d_0d"), TypePromotion.resultType(za, zb), "0-d, 0-d");
                    // The elementwise front end agrees (add accepts every pair but bool-only, which stays bool).
                    try (Tensor sum = ta.mul(zb)) {
                        assertEquals(dt(row, "dim_0d"), sum.dtype(), "mul(tensor, 0-d).dtype");
                    }
                }
            }));
        }
        for (JsonElement e : table().getAsJsonArray("scalars")) {
            JsonObject row = e.getAsJsonObject();
            DType a = dt(row, "a");
            tests.add(DynamicTest.dynamicTest(a.pyName() + "+scalars", () -> {
                try (Tensor ta = dimTensor(a); Tensor za = zeroDim(a)) {
                    assertEquals(dt(row, "dim_int"), new TypePromotion.State().add(ta).addScalar(DType.INT64).result(), "tensor, int");
                    assertEquals(dt(row, "dim_float"), new TypePromotion.State().add(ta).addScalar(DType.FLOAT64).result(), "tensor, float");
                    assertEquals(dt(row, "dim_bool"), new TypePromotion.State().add(ta).addScalar(DType.BOOL).result(), "tensor, bool");
                    assertEquals(dt(row, "0d_int"), new TypePromotion.State().add(za).addScalar(DType.INT64).result(), "0-d, int");
                    assertEquals(dt(row, "0d_float"), new TypePromotion.State().add(za).addScalar(DType.FLOAT64).result(), "0-d, float");
                    assertEquals(dt(row, "0d_bool"), new TypePromotion.State().add(za).addScalar(DType.BOOL).result(), "0-d, bool");
                    try (Tensor r = ta.mul(2.5)) {
                        assertEquals(dt(row, "dim_float"), r.dtype(), "mul(tensor, 2.5).dtype");
                    }
                }
            }));
        }
        return tests.stream();
    }
}
