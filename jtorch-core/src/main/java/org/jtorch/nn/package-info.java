/**
 * Neural-network layers, as {@code torch.nn}: {@link org.jtorch.nn.Module} and its subclasses, the functional forms in
 * {@link org.jtorch.nn.F}, initialisers in {@link org.jtorch.nn.Init}, and utilities in {@code org.jtorch.nn.utils}
 * (gradient clipping, and {@link org.jtorch.nn.utils.Rnn}'s padding and packing of variable-length sequences).
 *
 * <p><b>Conventions.</b> Parameter and buffer names are PyTorch's ({@code weight}, {@code running_mean},
 * {@code weight_ih_l0_reverse}), registered in PyTorch's order, so that state dicts, safetensors files and checkpoints
 * move between the two. Keyword arguments beyond the positional ones come through an options object with PyTorch's
 * defaults ({@code new LSTM(10, 20, LSTM.options().numLayers(2).batchFirst(true))}); default initialisation is
 * PyTorch's, drawn from the options' {@link org.jtorch.types.Generator}.
 *
 * <p><b>Keyword arguments of the functional ops</b> come as one immutable record per op, nested in {@link
 * org.jtorch.nn.F} ({@code F.crossEntropy(x, t, CrossEntropy.options().reduction(SUM).labelSmoothing(0.1))}): see F's
 * class comment. PyTorch's {@code None} is null there, never a sentinel value.
 *
 * <p><b>Several inputs or outputs.</b> Every module implements the single-tensor {@link org.jtorch.nn.Module#forward(
 * org.jtorch.Tensor)}, which {@link org.jtorch.nn.Sequential} chains. A module whose PyTorch forward takes or returns
 * a tuple adds a typed overload whose extra inputs and outputs are records, named after PyTorch's tuple:
 * {@link org.jtorch.nn.LSTM#forward(org.jtorch.Tensor, org.jtorch.nn.LSTM.State)} maps {@code (input, (h, c))} to
 * {@link org.jtorch.nn.LSTM.Output}{@code (output, hN, cN)}, {@link org.jtorch.nn.RNN.Output} is {@code (output, hN)} and
 * {@link org.jtorch.nn.MultiheadAttention.Output} {@code (output, weights)}. A null optional input means PyTorch's
 * {@code None} (zero initial states). The same call with its inputs in one record is the module's
 * {@link org.jtorch.nn.TupleModule}{@code <I, O>} form ({@code lstm.forward(new LSTM.Input(x, state))}; an encoder's
 * {@code (src, mask)} is {@link org.jtorch.nn.AttentionEncoder.Input}, attention's keywords {@link
 * org.jtorch.nn.MultiheadAttention.Input}): the form generic code uses, since its values'
 * tensors are found by {@link org.jtorch.nn.TensorTree#flatten}. {@link org.jtorch.nn.Sequential#of} chains such
 * modules with types checked by the compiler, {@link org.jtorch.nn.parallel.DistributedDataParallel#typed} runs them
 * under DDP, and a tracing JIT is meant to take the same form (see {@link org.jtorch.nn.TupleModule} for why this design).
 * The single-tensor form returns the first output and closes the others, so
 * {@code new Sequential(lstm, head)} works where the other outputs are not needed. Output records are
 * {@link java.lang.AutoCloseable} and close all their tensors; the tensors are ordinary results that a
 * {@link org.jtorch.memory.MemoryScope} releases too. A state carried to the next call outlives its scope with
 * {@code scope.keep(...)}, detached first when its graph should end there ({@link org.jtorch.nn.LSTM.State#detach()},
 * truncated backpropagation through time). Several tensor inputs are positional overloads with PyTorch's argument order,
 * null for {@code None}: {@link org.jtorch.nn.TransformerEncoderLayer#forward(org.jtorch.Tensor, org.jtorch.Tensor,
 * org.jtorch.Tensor)} is {@code (src, src_mask, src_key_padding_mask)}; the forms shared by a layer and its stack are
 * declared once ({@link org.jtorch.nn.AttentionEncoder}, {@link org.jtorch.nn.AttentionDecoder}). Modules whose every
 * PyTorch call needs two sequences (a decoder and its memory, {@link org.jtorch.nn.Transformer}'s source and target) have
 * no single-tensor form: theirs throws {@link java.lang.UnsupportedOperationException}, as {@link org.jtorch.nn.ModuleList}'s.
 *
 * <p><b>Copies.</b> {@link org.jtorch.nn.Module#deepCopy()} is Python's {@code copy.deepcopy(module)}: new storage,
 * the same training flags, {@code requiresGrad} and gradients; hooks are not copied. A field holding a child module or
 * a tensor is pointed at the copy's own, so it must not be {@code final} (deepCopy refuses one, naming it, rather than
 * writing a final field through reflection, which JEP 500 takes away).
 *
 * <p>Ownership: a module owns its parameters and buffers (see {@link org.jtorch.nn.Module}); the caller owns what
 * {@code forward} returns. Thread safety: none; a module is used from one thread at a time.
 */
package org.jtorch.nn;
