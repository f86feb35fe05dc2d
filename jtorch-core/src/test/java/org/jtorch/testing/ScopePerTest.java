package org.jtorch.testing;

import org.jtorch.memory.MemoryScope;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Runs each test of a class annotated {@code @ExtendWith(ScopePerTest.class)} inside its own {@link MemoryScope}: the
 * tensors a test creates are released when it ends. The callbacks run on the test's thread, as the scope requires.
 */
public final class ScopePerTest implements BeforeEachCallback, AfterEachCallback {
    private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(ScopePerTest.class);

    @Override
    public void beforeEach(ExtensionContext context) {
        context.getStore(NAMESPACE).put("scope", new MemoryScope());
    }

    @Override
    public void afterEach(ExtensionContext context) {
        MemoryScope scope = context.getStore(NAMESPACE).remove("scope", MemoryScope.class);
        if (scope != null) scope.close();
    }
}
