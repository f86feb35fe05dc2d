package org.jtorch.cuda.nvrtc;

import java.util.List;
import org.jtorch.cuda.CudaException;

/** NVRTC rejected a source: the message holds the file name, the options and the compiler's log. */
public final class NvrtcCompileException extends CudaException {
    private final String log;

    public NvrtcCompileException(String name, int code, String errorName, List<String> options, String log) {
        super("nvrtcCompileProgram(" + name + ", " + options + ")", code, errorName, "\n" + log);
        this.log = log;
    }

    public String log() {
        return log;
    }
}
