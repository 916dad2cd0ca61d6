// Message catalogue of the shared widgets and the components (English and
// Simplified Chinese). The tutorial page merges its own catalogue on top.
// Placeholders are {name}; missing keys fall back to English, then to the key.

export const COMPONENT_MESSAGES = {
  en: {
    'hm.export': 'Download {title} as {format}',
    'hm.exportMenu': 'Export',
    'hm.table': 'Show values as a table',
    'hm.tableTooBig': 'The map has {rows} × {cols} cells, too many for a table: use the CSV or JSON export.',
    'hm.masked': 'masked (−1e9)',
    'hm.aria': '{title}: heatmap of {rows} rows by {cols} columns, values from {lo} to {hi}. Use the arrow keys to read cells, Enter to lock a cell.',
    'hm.legend': 'Colour scale ({palette}) from {lo} to {hi}',
    'hm.diverging': 'diverging blue–white–red',
    'hm.hint': 'Hover, or focus and use the arrow keys, to read a cell; click to lock it.',
    'hm.readout': '{row} {i}{rowLabel} → {col} {j}{colLabel}: {value}{locked}',
    'hm.locked': ' (locked)',
    'hm.kind.query': 'query',
    'hm.kind.key': 'key',
    'hm.kind.position': 'position',
    'hm.kind.dimension': 'dimension',
    'hm.kind.row': 'row',
    'hm.kind.column': 'column',
    'hm.kind.token': 'token',
    'hm.head': 'head {h}',
    'hm.average': 'average of {n} heads',
    'hm.layerHead': 'layer {l} · head {h}',
    'hm.modelLoading': 'Loading the {model} model…',
    'hm.unknown': 'Outside the model’s vocabulary, shown as [UNK]: {chars}',
    'flow.play': 'Play',
    'flow.pause': 'Pause',
    'flow.prev': 'Previous step',
    'flow.next': 'Next step',
    'flow.restart': 'Restart',
    'flow.step': 'Step {n} of {total}',
    'flow.scrub': 'Pipeline step',
    'flow.clickHint': 'Click a block to see its values.',
    'flow.values': 'Values of {step} {shape}',
    'flow.slice': 'slice b = {b}{head}',
    'flow.noValues': 'Values are not available for this step.',
    'flow.tooBig': 'This tensor is too large to compute on the page ({n} multiply-adds); lower L or E.',
    'flow.aria': 'Tensor {step} with shape {shape}',
    'pe.heatmap': 'Positional encoding PE [positions × dimensions]',
    'pe.curves': 'PE as a function of position',
    'pe.dim': 'dim {d} ({fn})',
    'pe.similarity': 'PE · PEᵀ, normalised: cosine similarity of positions',
    'pe.readout': 'position {pos}: {values}',
    'ex.text': 'Sentence',
    'ex.heads': 'Heads H',
    'ex.embed': 'Embedding E',
    'ex.seed': 'Seed',
    'ex.mask': 'Mask',
    'ex.mask.none': 'none',
    'ex.mask.causal': 'causal',
    'ex.mask.padding': 'padding',
    'ex.mask.both': 'causal + padding',
    'ex.headMaps': 'Attention weights per head',
    'ex.loading': 'Loading the WebAssembly module…',
    'ex.error': 'Error: {message}',
    'ex.shapes': 'Dimension flow',
    'comp.attentionOf': 'Attention weights {shape}',
    'comp.noData': 'No attention data: set the tokens attribute or the attention property.',
  },
  zh: {
    'hm.export': '将 {title} 下载为 {format}',
    'hm.exportMenu': '导出',
    'hm.table': '以表格显示数值',
    'hm.tableTooBig': '该图有 {rows} × {cols} 个格子，太多，无法显示为表格：请使用 CSV 或 JSON 导出。',
    'hm.masked': '已遮蔽（−1e9）',
    'hm.aria': '{title}：{rows} 行 × {cols} 列的热力图，数值范围 {lo} 到 {hi}。用方向键读取格子，按 Enter 锁定。',
    'hm.legend': '色标（{palette}）从 {lo} 到 {hi}',
    'hm.diverging': '蓝–白–红发散色',
    'hm.hint': '悬停，或聚焦后用方向键读取格子；点击可锁定。',
    'hm.readout': '{row} {i}{rowLabel} → {col} {j}{colLabel}：{value}{locked}',
    'hm.locked': '（已锁定）',
    'hm.kind.query': '查询',
    'hm.kind.key': '键',
    'hm.kind.position': '位置',
    'hm.kind.dimension': '维度',
    'hm.kind.row': '行',
    'hm.kind.column': '列',
    'hm.kind.token': '词元',
    'hm.head': '第 {h} 头',
    'hm.average': '{n} 个头的平均',
    'hm.layerHead': '第 {l} 层 · 第 {h} 头',
    'hm.modelLoading': '正在加载 {model} 模型…',
    'hm.unknown': '不在模型词表中、显示为 [UNK] 的字符：{chars}',
    'flow.play': '播放',
    'flow.pause': '暂停',
    'flow.prev': '上一步',
    'flow.next': '下一步',
    'flow.restart': '重新开始',
    'flow.step': '第 {n} 步，共 {total} 步',
    'flow.scrub': '流水线步骤',
    'flow.clickHint': '点击方块查看数值。',
    'flow.values': '{step} {shape} 的数值',
    'flow.slice': '切片 b = {b}{head}',
    'flow.noValues': '该步骤没有可显示的数值。',
    'flow.tooBig': '该张量太大，无法在页面中计算（{n} 次乘加）；请减小 L 或 E。',
    'flow.aria': '张量 {step}，形状 {shape}',
    'pe.heatmap': '位置编码 PE [位置 × 维度]',
    'pe.curves': 'PE 随位置变化的曲线',
    'pe.dim': '维度 {d}（{fn}）',
    'pe.similarity': '归一化的 PE · PEᵀ：位置之间的余弦相似度',
    'pe.readout': '位置 {pos}：{values}',
    'ex.text': '句子',
    'ex.heads': '头数 H',
    'ex.embed': '嵌入维度 E',
    'ex.seed': '随机种子',
    'ex.mask': '掩码',
    'ex.mask.none': '无',
    'ex.mask.causal': '因果',
    'ex.mask.padding': '填充',
    'ex.mask.both': '因果 + 填充',
    'ex.headMaps': '每个头的注意力权重',
    'ex.loading': '正在加载 WebAssembly 模块…',
    'ex.error': '错误：{message}',
    'ex.shapes': '维度变化',
    'comp.attentionOf': '注意力权重 {shape}',
    'comp.noData': '没有注意力数据：请设置 tokens 属性或 attention 属性。',
  },
};

export const LANGS = ['en', 'zh'];

/** Normalises 'zh-CN', 'zh-Hans', … to 'zh'; anything else to 'en'. */
export function normalizeLang(lang) {
  return String(lang ?? '').toLowerCase().startsWith('zh') ? 'zh' : 'en';
}

/**
 * A translator for a language over one or more catalogues ({en: {...}, zh: {...}}).
 * @returns {(key: string, params?: object) => string}
 */
export function translator(lang, ...catalogues) {
  const l = normalizeLang(lang);
  const all = [COMPONENT_MESSAGES, ...catalogues];
  const table = Object.assign({}, ...all.map((c) => c.en ?? {}), ...all.map((c) => c[l] ?? {}));
  const t = (key, params) => {
    const s = table[key];
    if (s === undefined) return key;
    return params ? s.replace(/\{(\w+)\}/g, (m, k) => (params[k] !== undefined ? String(params[k]) : m)) : s;
  };
  t.lang = l;
  t.has = (key) => table[key] !== undefined;
  return t;
}
