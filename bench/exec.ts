import { spawn } from "node:child_process";
import { once } from "node:events";

/** Run a command (LC_ALL=C); resolves with stdout, rejects with the exit code and stderr. */
export async function run(
  command: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string>; input?: string } = {},
): Promise<string> {
  const { cwd, env, input } = options;
  const child = spawn(command, args, {
    cwd,
    env: { ...process.env, ...env, LC_ALL: "C" },
    stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (c: Buffer) => (out += c.toString()));
  child.stderr!.on("data", (c: Buffer) => (err += c.toString()));
  child.stdin?.end(input);
  const [code] = (await once(child, "exit")) as [number | null];
  if (code !== 0) throw new Error(`${command} ${args.join(" ")} exited with ${String(code)}: ${err.trim()}`);
  return out;
}
