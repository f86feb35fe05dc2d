package org.jtorch.autograd;

/** Where a gradient goes: input {@code inputNr} of {@code node} (the node's forward output of that index). */
public record Edge(Node node, int inputNr) {}
