// @ts-check
/**
 * typescript-eslint strict, type-aware (the project service reads tsconfig.json), over src/, test/
 * and bench/. Rules switched off or relaxed here are the ones the code deliberately does otherwise;
 * each says why.
 */
import eslint from "@eslint/js";
import tseslint from "typescript-eslint";

/**
 * One error hierarchy (src/errors, ../shared/STYLE.md "Errors"): the code of src/ throws its
 * classes, never a bare Error nor one of the built-in kinds (TypeError, RangeError, SyntaxError,
 * ReferenceError, EvalError, URIError, AggregateError), and declares no Error subclass of its own
 * (a local one extends BaseError). An argument that breaks a function's contract (its caller's bug)
 * is an InvalidArgumentError; a caught value that may not be an Error becomes one with toError.
 * One use of a built-in kind stays: an AggregateError of several causes given as the `cause` of
 * an error of the hierarchy (`{ cause: new AggregateError(causes) }`, or a variable named `cause`),
 * as the configuration loader and the start-up secrets do; it is never thrown itself.
 * Exported for test/scripts/check.test.ts, which shows each selector firing.
 */
export const errorHierarchy = {
  files: ["src/**/*.ts"],
  ignores: ["src/errors/**", "src/**/*.test.ts", "src/**/testdata/**"],
  rules: {
    "no-restricted-syntax": [
      "error",
      {
        selector: ":matches(NewExpression, CallExpression)[callee.name='Error']",
        message: "Throw a class of src/errors (one per failure; InternalError for what cannot happen), not a bare Error.",
      },
      {
        selector: ":matches(NewExpression, CallExpression)[callee.name=/^(Eval|Range|Reference|Syntax|Type|URI)Error$/]",
        message:
          "Throw a class of src/errors, not a built-in error kind: InvalidArgumentError for an argument its caller should have refused, the class of the failure otherwise.",
      },
      {
        selector:
          ":matches(NewExpression, CallExpression)[callee.name='AggregateError']:not(Property[key.name='cause'] *, VariableDeclarator[id.name='cause'] *)",
        message:
          "An AggregateError is only the cause of an error of src/errors ({ cause: new AggregateError(causes) }); throw the class of the failure.",
      },
      {
        selector: ":matches(ClassDeclaration, ClassExpression)[superClass.name=/^(Aggregate|Eval|Range|Reference|Syntax|Type|URI)?Error$/]",
        message: "An error class extends BaseError (src/errors) and has a static code of its own.",
      },
    ],
  },
};

export default tseslint.config(
  // wasm/wasm_exec.js is Go's own loader, copied from the Go distribution unchanged (ADR 0011).
  { ignores: ["dist/", "node_modules/", "go/", "deploy/", "examples/", "repo-layout/", "wasm/wasm_exec.js", "**/*.generated.ts"] },
  {
    files: ["**/*.ts"],
    extends: [eslint.configs.recommended, ...tseslint.configs.strictTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      // With noUncheckedIndexedAccess, `xs[i]!` after a bounds check is the idiom (260 places).
      "@typescript-eslint/no-non-null-assertion": "off",
      // Numbers, booleans and possibly-undefined values in messages are fine; objects are not.
      "@typescript-eslint/restrict-template-expressions": [
        "error",
        { allowNumber: true, allowBoolean: true, allowNullish: true, allowRegExp: true },
      ],
      // `(chunk) => (text += chunk)` and `() => void promise` are the callback idiom here.
      "@typescript-eslint/no-confusing-void-expression": ["error", { ignoreArrowShorthand: true, ignoreVoidOperator: true }],
      // Injected dependencies (delay, object store, watcher hooks) implement async interfaces
      // without awaiting; an `async` body keeps throws as rejections.
      "@typescript-eslint/require-await": "off",
      // Records and YAML documents are plain objects edited in place, keys included.
      "@typescript-eslint/no-dynamic-delete": "off",
      // @kubernetes/client-node's models are classes that its own API accepts as object literals.
      "@typescript-eslint/no-unsafe-class-instance-assignment": "off",
      // Defensive checks of input typed more narrowly than it may arrive (validation, closures
      // that flip a flag across an await): the rule reports them as unnecessary.
      "@typescript-eslint/no-unnecessary-condition": "off",
      // execFile's error type (an Omit<> of ExecException) is not recognised as an Error.
      "@typescript-eslint/prefer-promise-reject-errors": "off",
      // A caught `unknown` is re-thrown as it came.
      "@typescript-eslint/only-throw-error": ["error", { allowThrowingUnknown: true }],
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", destructuredArrayIgnorePattern: "^_", ignoreRestSiblings: true },
      ],
    },
  },
  errorHierarchy,
  {
    // Tests edit parsed YAML (`any` from yaml's parse) and JSON bodies freely, and stringify what
    // they parsed.
    files: ["test/**/*.ts", "src/**/*.test.ts", "src/**/testdata/**/*.ts", "bench/**/*.ts"],
    rules: {
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-member-access": "off",
      "@typescript-eslint/no-unsafe-call": "off",
      "@typescript-eslint/no-unsafe-argument": "off",
      "@typescript-eslint/no-unsafe-return": "off",
      "@typescript-eslint/restrict-plus-operands": "off",
      "@typescript-eslint/no-base-to-string": "off",
      "@typescript-eslint/unbound-method": "off",
    },
  },
  {
    files: ["**/*.js", "**/*.mjs"],
    extends: [eslint.configs.recommended],
    languageOptions: { globals: { process: "readonly", console: "readonly", URL: "readonly" } },
  },
  {
    // The worker that hosts the Go module is CommonJS (wasm/package.json), run by worker_threads.
    files: ["wasm/worker.js"],
    languageOptions: { sourceType: "commonjs", globals: { require: "readonly", TextDecoder: "readonly", WebAssembly: "readonly" } },
  },
);
