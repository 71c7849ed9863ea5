"use strict";
// The worker thread that runs the WebAssembly module built from go/src (see
// src/render/wasm-module.ts, which starts it). It receives the compiled module, runs Go's main
// (which publishes globalThis.gitopsBrokerModule) and answers {id, method, request} messages
// with {id, response} or {id, error}. The Go runtime's own prints (a fatal error before it
// exits) are kept for the error message, never written to the process's stdout.
const { parentPort, workerData } = require("node:worker_threads");

let printed = "";
const decoder = new TextDecoder("utf-8");
const enosys = () => Object.assign(new Error("not implemented"), { code: "ENOSYS" });
globalThis.fs = {
  constants: { O_WRONLY: -1, O_RDWR: -1, O_CREAT: -1, O_TRUNC: -1, O_APPEND: -1, O_EXCL: -1 },
  writeSync(fd, buf) {
    // The head is kept: a fatal error says what it is before the goroutines it lists.
    if (printed.length < 4096) printed = (printed + decoder.decode(buf)).slice(0, 4096);
    return buf.length;
  },
  write(fd, buf, offset, length, position, callback) {
    if (offset !== 0 || length !== buf.length || position !== null) return callback(enosys());
    callback(null, this.writeSync(fd, buf));
  },
  fsync(fd, callback) {
    callback(null);
  },
};
for (const name of ["chmod", "chown", "close", "fchmod", "fchown", "fstat", "ftruncate", "lchown", "link", "lstat", "mkdir", "open", "read", "readdir", "readlink", "rename", "rmdir", "stat", "symlink", "truncate", "unlink", "utimes"]) {
  globalThis.fs[name] = (...args) => args[args.length - 1](enosys());
}
require("./wasm_exec.js");

const go = new globalThis.Go();
// wasm_exec.js prints a non-zero exit code to the console; the code is kept for the message instead.
let exitCode;
go.exit = (code) => {
  exitCode = code;
};
// What the runtime said before the goroutines it lists (the stacks stay out of an OSB answer).
const exitedMessage = () => printed.split("\n\n")[0].trim() || `the Go program exited with code ${exitCode}`;
WebAssembly.instantiate(workerData.module, go.importObject).then(
  (instance) => {
    go.run(instance).then(() => parentPort.postMessage({ exited: exitedMessage() }));
    const module = globalThis.gitopsBrokerModule;
    parentPort.on("message", ({ id, method, request }) => {
      let result;
      let thrown;
      try {
        result = module.call(method, request);
      } catch (e) {
        thrown = e;
      }
      // A Go fatal error (out of memory ...) ends the program, with a throw or (go1.21's runtime)
      // without one, the call then returning nothing: no further call can succeed.
      if (thrown !== undefined || go.exited) {
        const error = printed.trim() || thrown === undefined ? exitedMessage() : String(thrown && thrown.message ? thrown.message : thrown);
        parentPort.postMessage({ id, error, exited: true });
        return;
      }
      const memory = instance.exports.mem.buffer.byteLength;
      if (typeof result === "string") parentPort.postMessage({ id, error: result, memory });
      else parentPort.postMessage({ id, response: result, memory }, [result.buffer]);
    });
    parentPort.postMessage({ ready: true, methods: Array.from(module.methods) });
  },
  (e) => parentPort.postMessage({ exited: `cannot instantiate the module: ${e && e.message ? e.message : e}` }),
);
