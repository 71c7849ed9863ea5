import { registerEngine } from "./engine.js";
import { gotemplateEngine } from "./gotemplate.js";
import { handlebarsEngine } from "./handlebars.js";
import { helmEngine } from "./helm.js";

/** The engines plans can name (`type`). Importing this module registers them, once. */
registerEngine(handlebarsEngine);
registerEngine(gotemplateEngine);
registerEngine(helmEngine);
