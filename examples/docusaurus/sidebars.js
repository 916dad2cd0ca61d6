module.exports = {
  docs: ['intro', 'components', 'other'],
};
