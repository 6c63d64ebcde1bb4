// total sums the price fields (strings like "4.99") of items.
function total(items) {
  return items.reduce((sum, it) => sum + parseInt(it.price, 10), 0);
}

module.exports = { total };
