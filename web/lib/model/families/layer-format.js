// Helpers of the per-layer state-dict formats (web/lib/io/state-dict-formats.js)
// that the family files define beside their tables.

/** A tensor { data, shape }. */
export const t = (data, shape) => ({ data, shape });

/** A norm as the formats return it. */
export const norm = (gamma, beta, eps, placement, kind = 'layer') => ({ gamma, beta, eps, placement, kind });

/** A post-attention LayerNorm (selfAttentionLayer's placement). */
export const POST = Object.freeze({ placement: 'post', kind: 'layer' });

/** The RegExp of a name suffix that marks a layer: `a.b.weight` → /a\.b\.weight$/. */
export const anchorOf = (suffix) => new RegExp(`${suffix.replace(/\./g, '\\.')}$`);
