// The load hook of register.mjs: it runs in the loader's thread, so it writes to the file itself.
import { appendFileSync } from 'node:fs';

let file;

export function initialize(data) {
  file = data.file;
}

export async function load(url, context, nextLoad) {
  if (url.startsWith('file:')) appendFileSync(file, `${url}\n`);
  return nextLoad(url, context);
}
