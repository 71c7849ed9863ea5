import { describe, expect, it } from "vitest";
import { Listeners } from "./listeners.js";

function setup() {
  const errors: { obj: Record<string, unknown>; msg: string }[] = [];
  const listeners = new Listeners<[string, number]>({ error: (obj, msg) => void errors.push({ obj: obj as Record<string, unknown>, msg }) }, "onTip");
  return { listeners, errors };
}

describe("Listeners", () => {
  it("calls every listener with the event, in the order they were added, until it is removed", () => {
    const { listeners } = setup();
    const heard: string[] = [];
    listeners.add((tip, n) => void heard.push(`a:${tip}:${n}`));
    const remove = listeners.add((tip, n) => void heard.push(`b:${tip}:${n}`));
    expect(listeners.size).toBe(2);
    listeners.emit("t1", 1);
    remove();
    expect(listeners.size).toBe(1);
    listeners.emit("t2", 2);
    expect(heard).toEqual(["a:t1:1", "b:t1:1", "a:t2:2"]);
  });

  it("logs a listener that throws, named after the method that added it, and still calls the others", () => {
    const { listeners, errors } = setup();
    const heard: string[] = [];
    const boom = new Error("boom");
    listeners.add(() => {
      throw boom;
    });
    listeners.add((tip) => void heard.push(tip));
    expect(() => listeners.emit("t1", 1)).not.toThrow();
    expect(heard).toEqual(["t1"]);
    expect(errors).toEqual([{ obj: { err: boom }, msg: "onTip listener failed" }]);
  });
});
