package org.jtorch.distributed;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A key-value store over TCP for rendezvous, as c10d's {@code TCPStore}: one process (usually rank 0, at
 * {@code MASTER_ADDR:MASTER_PORT}) serves it, and every process, the server's included, is a client. Used to
 * exchange small values (addresses, NCCL unique ids) and as a barrier; it moves no tensors.
 *
 * <p>{@link #get} and {@link #waitFor} block until the keys exist or the store's timeout passes, then throw a
 * {@link DistributedException} naming the keys and the timeout. {@link #add} keeps a counter as a decimal string,
 * as c10d does. A client that starts before the server retries its connection until the timeout.
 *
 * <p>Thread safety: a store may be shared by threads; each request is one round trip on its connection.
 */
public final class TcpStore implements AutoCloseable {
    private static final byte SET = 1;
    private static final byte GET = 2;
    private static final byte ADD = 3;
    private static final byte WAIT = 4;
    private static final byte CHECK = 5;
    private static final byte DELETE = 6;
    private static final byte NUM_KEYS = 7;
    private static final byte OK = 0;
    private static final byte TIMED_OUT = 1;

    private final String host;
    private final Duration timeout;
    private final Server server;
    private final Socket socket;
    private final DataInputStream in;
    private final DataOutputStream out;

    /**
     * Connects to the store at {@code host:port}, first serving it there when {@code isServer} ({@code port} 0 then
     * picks a free port, see {@link #port()}).
     */
    public TcpStore(String host, int port, boolean isServer, Duration timeout) {
        if (host == null) throw new NullPointerException("TcpStore: host is null");
        if (timeout == null || timeout.isNegative() || timeout.isZero()) throw new IllegalArgumentException("TcpStore: timeout must be positive, got " + timeout);
        if (port < 0 || port > 65535 || (port == 0 && !isServer)) throw new IllegalArgumentException("TcpStore: invalid port " + port);
        this.host = host;
        this.timeout = timeout;
        this.server = isServer ? new Server(host, port) : null;
        int target = isServer ? server.port() : port;
        this.socket = connect(host, target, timeout);
        try {
            socket.setTcpNoDelay(true);
            in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
            out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
        } catch (IOException e) {
            close();
            throw new DistributedException("TcpStore: cannot open a connection to " + host + ":" + target + ": " + e.getMessage(), e);
        }
    }

    /** The port the store is served on. */
    public int port() {
        return socket.getPort();
    }

    public Duration timeout() {
        return timeout;
    }

    public void set(String key, byte[] value) {
        request("set", key, o -> {
            o.writeByte(SET);
            o.writeUTF(key);
            o.writeInt(value.length);
            o.write(value);
        }, i -> null);
    }

    public void set(String key, String value) {
        set(key, value.getBytes(StandardCharsets.UTF_8));
    }

    /** The value of {@code key}, waiting up to the timeout for another process to set it. */
    public byte[] get(String key) {
        return request("get", key, o -> {
            o.writeByte(GET);
            o.writeUTF(key);
            o.writeLong(timeout.toMillis());
        }, i -> {
            byte[] v = new byte[i.readInt()];
            i.readFully(v);
            return v;
        });
    }

    public String getString(String key) {
        return new String(get(key), StandardCharsets.UTF_8);
    }

    /** Adds {@code delta} to the counter {@code key} (missing counts as 0) and returns the new value. */
    public long add(String key, long delta) {
        return request("add", key, o -> {
            o.writeByte(ADD);
            o.writeUTF(key);
            o.writeLong(delta);
        }, DataInputStream::readLong);
    }

    /** Waits until every key exists, up to the store's timeout. */
    public void waitFor(List<String> keys) {
        waitFor(keys, timeout);
    }

    public void waitFor(List<String> keys, Duration wait) {
        request("wait", String.join(", ", keys), o -> {
            o.writeByte(WAIT);
            o.writeInt(keys.size());
            for (String k : keys) o.writeUTF(k);
            o.writeLong(wait.toMillis());
        }, i -> null);
    }

    /** True when every key exists (does not wait). */
    public boolean check(List<String> keys) {
        return request("check", String.join(", ", keys), o -> {
            o.writeByte(CHECK);
            o.writeInt(keys.size());
            for (String k : keys) o.writeUTF(k);
        }, DataInputStream::readBoolean);
    }

    public boolean deleteKey(String key) {
        return request("deleteKey", key, o -> {
            o.writeByte(DELETE);
            o.writeUTF(key);
        }, DataInputStream::readBoolean);
    }

    public long numKeys() {
        return request("numKeys", "", o -> o.writeByte(NUM_KEYS), DataInputStream::readLong);
    }

    /** Closes this client, and the server if this process serves the store. */
    @Override
    public void close() {
        if (socket != null) closeQuietly(socket);
        if (server != null) server.close();
    }

    private static void closeQuietly(java.io.Closeable c) {
        try {
            c.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    // ------------------------------------------------------------------ client side

    private interface Writer {
        void write(DataOutputStream o) throws IOException;
    }

    private interface Reader<T> {
        T read(DataInputStream i) throws IOException;
    }

    private synchronized <T> T request(String op, String keys, Writer writer, Reader<T> reader) {
        try {
            writer.write(out);
            out.flush();
            byte status = in.readByte();
            if (status == TIMED_OUT) {
                throw new DistributedException("TcpStore." + op + ": timed out after " + Work.formatDuration(timeout) + " waiting for key(s) "
                        + keys + " at " + host + ":" + port());
            }
            return reader.read(in);
        } catch (IOException e) {
            throw new DistributedException("TcpStore." + op + "(" + keys + "): the connection to the store at " + host + ":" + port()
                    + " failed (" + (e instanceof EOFException ? "closed by the server" : e.getMessage()) + ")", e);
        }
    }

    private static Socket connect(String host, int port, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        IOException last = null;
        while (System.nanoTime() < deadline) {
            Socket s = new Socket();
            try {
                s.connect(new InetSocketAddress(host, port), (int) Math.max(1, Math.min(timeout.toMillis(), 5_000)));
                // Retrying a local port in the ephemeral range can connect the socket to itself (TCP simultaneous open).
                if (s.getLocalPort() != port || !s.getLocalAddress().equals(s.getInetAddress())) return s;
                throw new IOException("connected to itself");
            } catch (IOException e) {
                last = e;
                closeQuietly(s);
                try {
                    Thread.sleep(50); // the server may not be up yet
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        }
        throw new DistributedException("TcpStore: could not connect to " + host + ":" + port + " within " + Work.formatDuration(timeout)
                + (last == null ? "" : " (" + last.getMessage() + ")") + "; is the process serving the store (rank 0) running?", last);
    }

    // ------------------------------------------------------------------ server side

    /** The store itself: a map guarded by its monitor, one virtual thread per client connection. */
    private static final class Server {
        private final ServerSocket listener;
        private final Map<String, byte[]> data = new HashMap<>();
        private final Set<Socket> clients = ConcurrentHashMap.newKeySet();
        private final Thread acceptor;

        Server(String host, int port) {
            try {
                listener = new ServerSocket();
                listener.setReuseAddress(true);
                listener.bind(new InetSocketAddress(host, port));
            } catch (IOException e) {
                throw new DistributedException("TcpStore: cannot serve on " + host + ":" + port + ": " + e.getMessage(), e);
            }
            acceptor = Thread.ofVirtual().name("jtorch-tcpstore-accept").start(this::acceptLoop);
        }

        int port() {
            return listener.getLocalPort();
        }

        private void acceptLoop() {
            while (!listener.isClosed()) {
                try {
                    Socket s = listener.accept();
                    s.setTcpNoDelay(true);
                    clients.add(s);
                    if (listener.isClosed()) { // close() ran between accept and add: it did not see this client
                        closeQuietly(s);
                        return;
                    }
                    Thread.ofVirtual().name("jtorch-tcpstore-client").start(() -> serve(s));
                } catch (IOException e) {
                    return; // closed
                }
            }
        }

        private void serve(Socket s) {
            try (s) {
                DataInputStream i = new DataInputStream(new BufferedInputStream(s.getInputStream()));
                DataOutputStream o = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
                while (true) {
                    byte cmd;
                    try {
                        cmd = i.readByte();
                    } catch (EOFException e) {
                        return;
                    }
                    handle(cmd, i, o);
                    o.flush();
                }
            } catch (IOException e) {
                // the client went away
            } finally {
                clients.remove(s);
            }
        }

        private void handle(byte cmd, DataInputStream i, DataOutputStream o) throws IOException {
            switch (cmd) {
                case SET -> {
                    String key = i.readUTF();
                    byte[] v = new byte[i.readInt()];
                    i.readFully(v);
                    synchronized (this) {
                        data.put(key, v);
                        notifyAll();
                    }
                    o.writeByte(OK);
                }
                case GET -> {
                    String key = i.readUTF();
                    long waitMs = i.readLong();
                    byte[] v = awaitKeys(List.of(key), waitMs) ? value(key) : null;
                    if (v == null) {
                        o.writeByte(TIMED_OUT);
                    } else {
                        o.writeByte(OK);
                        o.writeInt(v.length);
                        o.write(v);
                    }
                }
                case ADD -> {
                    String key = i.readUTF();
                    long delta = i.readLong();
                    long value;
                    synchronized (this) {
                        byte[] old = data.get(key);
                        value = (old == null ? 0 : Long.parseLong(new String(old, StandardCharsets.UTF_8))) + delta;
                        data.put(key, Long.toString(value).getBytes(StandardCharsets.UTF_8));
                        notifyAll();
                    }
                    o.writeByte(OK);
                    o.writeLong(value);
                }
                case WAIT -> {
                    List<String> keys = readKeys(i);
                    o.writeByte(awaitKeys(keys, i.readLong()) ? OK : TIMED_OUT);
                }
                case CHECK -> {
                    List<String> keys = readKeys(i);
                    boolean all;
                    synchronized (this) {
                        all = data.keySet().containsAll(keys);
                    }
                    o.writeByte(OK);
                    o.writeBoolean(all);
                }
                case DELETE -> {
                    String key = i.readUTF();
                    boolean removed;
                    synchronized (this) {
                        removed = data.remove(key) != null;
                    }
                    o.writeByte(OK);
                    o.writeBoolean(removed);
                }
                case NUM_KEYS -> {
                    long n;
                    synchronized (this) {
                        n = data.size();
                    }
                    o.writeByte(OK);
                    o.writeLong(n);
                }
                default -> throw new IOException("TcpStore: unknown request " + cmd);
            }
        }

        private static List<String> readKeys(DataInputStream i) throws IOException {
            int n = i.readInt();
            List<String> keys = new ArrayList<>(n);
            for (int k = 0; k < n; k++) keys.add(i.readUTF());
            return keys;
        }

        private synchronized byte[] value(String key) {
            return data.get(key);
        }

        private synchronized boolean awaitKeys(List<String> keys, long waitMs) {
            long deadline = System.nanoTime() + waitMs * 1_000_000L;
            while (!data.keySet().containsAll(keys)) {
                long left = (deadline - System.nanoTime()) / 1_000_000L;
                if (left <= 0) return false;
                try {
                    wait(left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
            return true;
        }

        void close() {
            closeQuietly(listener);
            for (Socket s : clients) closeQuietly(s);
            acceptor.interrupt();
            // A socket closed while a virtual thread is blocked in accept() is released only once that thread has
            // left it: wait, so that the port can be served again as soon as close() returns (a launcher run again).
            try {
                acceptor.join(Duration.ofSeconds(5));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public String toString() {
        return "TcpStore(" + host + ":" + port() + (server != null ? ", serving" : "") + ")";
    }
}
