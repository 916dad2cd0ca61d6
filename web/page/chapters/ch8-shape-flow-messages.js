// The strings of chapter 8 (ch8-shape-flow.js), in English and Simplified Chinese: keys
// ch8.*. The registry (registry.js) gives them to the page with the chapter;
// `backticks` render as code and **stars** as bold (setRich), {name} are placeholders.

export const MESSAGES = {
  en: {
    'ch8.p1': 'The whole layer at the current settings, step by step. The shapes and the values come from the library’s own trace, `layer.forward(x, { trace: \'values\' })`; nothing here is hard-coded or recomputed on the page. Play, pause or step, and click any block to see its values.',
    'ch8.check': 'Values of this call’s trace: {n} steps, the last (LayerNorm) equal to the layer’s output.',
    'ch8.try1': 'Set H = 4 in the settings: the lower flow splits E into 4 heads (split heads gives [B, 4, L, E / 4]), while the tutorial’s example above keeps its 8 heads of 64.',
    'ch8.tutorialTitle': 'The tutorial’s example: batch 2, 5 tokens, E = 512, 8 heads',
    'ch8.modelTitle': 'The shipped model’s first attention layer',
    'ch8.yourTitle': 'The same layer at your settings',
    'ch8.differs': 'What differs from the tutorial’s example ({tflow}): the {model} model reads one sentence at a time (batch 1) of {L} characters, its E = {E} splits into H = {H} heads of D = {D} ({flow}), and its mask is causal, as in its training. The steps are the same; the sizes differ, and the weights are learned rather than seeded.',
    'ch8.try2': 'Turn a mask on: a mask step appears between scores and softmax.',
    'ch8.p1L': 'The first attention layer of the shipped model, step by step. The shapes and the values come from the library’s own trace, `mha.forward(ln_1(x), …, { trace: \'values\' })` on the model’s own weights; nothing here is hard-coded or recomputed on the page. Play, pause or step, and click any block to see its values.',
    'ch8.learned': 'Learned weights: the trace of the first attention layer of the {model} model on your sentence ({L} characters): E = {E}, H = {H} heads of D = {D}, batch 1, with the causal mask; its input is ln_1(x) (chapter 7). The model around it: {N} layers, {V} characters in its vocabulary, {P} positions, an MLP {F} wide.',
    'ch8.checkL': 'Values of this call’s trace: {n} steps, the last (the output projection c_proj) equal to the attention’s output.',
    'ch8.tryL1': 'Step to “split heads”: [1, L, E] becomes [1, H, L, D], and the model’s D is E / H.',
    'ch8.tryL2': 'Step to the mask: the upper triangle is −1e9, the causal mask the model was trained with.',
  },
  zh: {
    'ch8.p1': '当前设置下的整个注意力层，一步一步展示。形状和数值都来自库自身的追踪 `layer.forward(x, { trace: \'values\' })`；这里没有任何硬编码，也不在页面上重新计算。可以播放、暂停或单步；点击任意方块查看它的数值。',
    'ch8.check': '本次调用追踪中的数值：共 {n} 步，最后一步（LayerNorm）就是该层的输出。',
    'ch8.try1': '在设置中把 H 设为 4：下面的流程把 E 拆成 4 个头（“拆分多头”得到 [B, 4, L, E / 4]），而上面教程的例子仍是 8 个 64 维的头。',
    'ch8.tutorialTitle': '教程中的例子：批大小 2、5 个词元、E = 512、8 个头',
    'ch8.modelTitle': '随包发布的模型的第一个注意力层',
    'ch8.yourTitle': '按你的设置运行的同一层',
    'ch8.differs': '与教程的例子（{tflow}）的不同之处：{model}模型一次读一个句子（批大小 1），共 {L} 个字符；它的 E = {E} 拆成 H = {H} 个头，每头 D = {D}（{flow}）；它的掩码是因果掩码，和训练时一样。步骤相同，只是尺寸不同，而且权重是学到的，不是由种子随机生成的。',
    'ch8.try2': '打开掩码：在分数和 softmax 之间会出现一个掩码步骤。',
    'ch8.p1L': '随包发布的模型的第一个注意力层，一步一步展示。形状和数值都来自库自身的追踪 `mha.forward(ln_1(x), …, { trace: \'values\' })`，使用模型自己的权重；这里没有任何硬编码，也不在页面上重新计算。可以播放、暂停或单步；点击任意方块查看它的数值。',
    'ch8.learned': '学到的权重：{model}模型第一个注意力层在你的句子（{L} 个字符）上的 trace：E = {E}，H = {H} 个头，每头 D = {D}，批大小 1，带因果掩码；它的输入是 ln_1(x)（第 7 章）。它所在的模型：{N} 层，词表 {V} 个字符，{P} 个位置，MLP 宽 {F}。',
    'ch8.checkL': '本次调用 trace 的值：共 {n} 步，最后一步（输出投影 c_proj）等于注意力的输出。',
    'ch8.tryL1': '走到“拆分多头”这一步：[1, L, E] 变成 [1, H, L, D]，模型的 D 等于 E / H。',
    'ch8.tryL2': '走到掩码这一步：上三角为 −1e9，正是模型训练时使用的因果掩码。',
  },
};
