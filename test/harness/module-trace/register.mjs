// Loaded with `node --import` before the program: records the URL of every module the program loads
// into the file named by BATON_MODULE_TRACE (one per line), through a load hook that runs first.
import { register } from 'node:module';

const file = process.env.BATON_MODULE_TRACE;
if (file) register('./hooks.mjs', import.meta.url, { data: { file } });
