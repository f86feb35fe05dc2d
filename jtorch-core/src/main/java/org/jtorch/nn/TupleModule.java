package org.jtorch.nn;

/**
 * The typed form of a module whose PyTorch {@code forward} takes or returns several values (a tuple): {@code I} and
 * {@code O} are {@link org.jtorch.Tensor} or records of tensors named after PyTorch's tuple, e.g. {@link LSTM}'s
 * {@code (input, (h, c)) -> (output, (h, c))} is {@code TupleModule<LSTM.Input, LSTM.Output>} and an encoder's
 * {@code (src, mask)} is {@code TupleModule<AttentionEncoder.Input, Tensor>}. The cells ({@code RNNCell}, {@code GRUCell}:
 * {@code RNN.Input -> Tensor}; {@code LSTMCell}: {@code LSTM.Input -> LSTM.State}), the decoders
 * ({@code AttentionDecoder.Input -> Tensor}) and {@code Transformer} ({@code Transformer.Input -> Tensor}) have the form too.
 *
 * <p><b>Why this design.</b> Every {@link Module} keeps the single-tensor {@link Module#forward(org.jtorch.Tensor)}, so
 * {@link Sequential} and everything written against {@code Module} run it unchanged. The several-value form is a second,
 * statically typed view instead of a {@code forward(Object...)}: the compiler checks what goes in and comes out, records
 * give PyTorch's tuple members names ({@code out.hN()}), and a record with a null component spells PyTorch's
 * {@code None}. A typed {@code Module<I, O>} base class would have made every module generic for the few that need it.
 * What generic machinery needs from the values is their tensors, in a fixed order: {@link TensorTree#flatten} finds them
 * in any record, list, array or map (PyTorch's pytree), which is how {@link Sequential#of typed Sequential chains} keep
 * their result past their scope, how {@link org.jtorch.nn.parallel.DistributedDataParallel#typed DDP} finds the
 * parameters an output does not reach, and how a tracing JIT can name a module's inputs and outputs.
 *
 * <p>For a {@link Module}, {@code I} is not {@code Tensor}: {@code Module} already declares {@code Tensor
 * forward(Tensor)}, the single-tensor form. A module taking one tensor and returning several values keeps a named method
 * ({@code AdaptiveMaxPool2d.forwardWithIndices}), or takes a one-component input record.
 *
 * <p>Ownership is {@link Module}'s: the caller owns what {@code forward} returns; output records are
 * {@link AutoCloseable} and close their tensors. Input records only carry the caller's tensors.
 *
 * @param <I> the input: a tensor or a record of tensors (and constants such as flags)
 * @param <O> the output: a tensor or a record of tensors
 */
@FunctionalInterface
public interface TupleModule<I, O> {
    O forward(I input);
}
