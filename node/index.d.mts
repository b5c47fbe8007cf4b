// Type declarations of the ES module entry of emq (index.mjs): the same declarations as the
// CommonJS entry (index.d.ts), each a named export, and the whole module as the default export.
import * as emq from './index.js';

export * from './index.js';
export default emq;
