/**
 * A TCP proxy in front of a test server that can "hang": while hanging it accepts connections
 * and reads them, but never answers and never closes, like a remote behind a stuck load balancer.
 *
 *   const proxy = await startHangProxy(gitServer.port);
 *   proxy.url("gitops.git") ... proxy.setHanging(true) ... proxy.setHanging(false) // drops the hung ones
 *
 * `setMutingPushes(true)` forwards everything but never answers a push (a connection that has
 * sent a `POST .../git-receive-pack`): the remote takes the pack and updates its branch, the
 * client hears nothing, like a remote that dies between applying a push and confirming it.
 */
import net from "node:net";

export interface HangProxy {
  readonly port: number;
  /** true: new connections are accepted and left unanswered; false: the hung ones are reset, new ones forwarded. */
  setHanging(hanging: boolean): void;
  /** Connections accepted while hanging, so far. */
  readonly hungConnections: number;
  /** true: pushes are forwarded and their answers dropped; false: the muted connections are reset. */
  setMutingPushes(muting: boolean): void;
  /** Pushes whose answer was dropped, so far. */
  readonly mutedPushes: number;
  close(): Promise<void>;
}

export async function startHangProxy(targetPort: number): Promise<HangProxy> {
  let hanging = false;
  let hungConnections = 0;
  let mutingPushes = false;
  let mutedPushes = 0;
  const muted = new Set<net.Socket>();
  const hung = new Set<net.Socket>();
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    open.add(client);
    client.on("close", () => open.delete(client));
    client.on("error", () => undefined);
    if (hanging) {
      hungConnections++;
      hung.add(client);
      client.resume();
      return;
    }
    const upstream = net.connect(targetPort, "127.0.0.1");
    open.add(upstream);
    upstream.on("close", () => open.delete(upstream));
    upstream.on("error", () => client.destroy());
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
    let mute = false;
    client.on("data", (chunk: Buffer) => {
      if (mutingPushes && !mute && /POST [^ ]*git-receive-pack/.test(chunk.toString("latin1"))) {
        mute = true;
        mutedPushes++;
        muted.add(client);
      }
      upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      if (!mute) client.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    get hungConnections() {
      return hungConnections;
    },
    get mutedPushes() {
      return mutedPushes;
    },
    setMutingPushes(value) {
      mutingPushes = value;
      if (!value) {
        for (const socket of muted) socket.destroy();
        muted.clear();
      }
    },
    setHanging(value) {
      hanging = value;
      if (!value) {
        for (const socket of hung) socket.destroy();
        hung.clear();
      }
    },
    async close() {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
