// The family tables live in families/ (one file each, index.js the registry);
// this module keeps the old import path for the folder listing
// (web/components/lib/model-client.js) and the fuzz target.
export { FAMILIES, SUPPORTED, architectureOf } from './families/index.js';
