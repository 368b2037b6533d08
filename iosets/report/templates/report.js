// iosets report: draw each figure from its JSON; sort, filter and page through interactive tables.
(function () {
  "use strict";
  var options = JSON.parse(document.getElementById("plot-options").textContent);

  function drawFigures() {
    document.querySelectorAll("div.plot[data-figure]").forEach(function (div) {
      var figure = JSON.parse(document.getElementById(div.dataset.figure).textContent);
      var layout = Object.assign({}, options.layout, figure.layout);
      var config = Object.assign({}, options.config, {toImageButtonOptions: {format: "png", filename: div.id}});
      Plotly.newPlot(div, figure.data, layout, config);
    });
  }

  function cellKey(row, column, numeric) {
    var value = row.cells[column].dataset.value;
    if (!numeric) return value;
    return value === "" ? NaN : Number(value);
  }

  function isMissing(key, numeric) {
    return numeric ? Number.isNaN(key) : key === "";
  }

  function InteractiveTable(table) {
    this.table = table;
    this.body = table.tBodies[0];
    this.all = Array.prototype.slice.call(this.body.rows);
    this.matching = this.all;
    this.pageRows = Number(table.dataset.pageRows);  // rows shown at a time: laying out thousands takes seconds
    this.limit = this.pageRows;
    this.count = document.querySelector(".table-count[data-table='" + table.id + "']");
    this.more = document.querySelector(".table-more[data-table='" + table.id + "']");
    var self = this;
    table.tHead.rows[0].querySelectorAll("th").forEach(function (header) {
      header.addEventListener("click", function () { self.sortBy(header); });
      header.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") { event.preventDefault(); self.sortBy(header); }
      });
    });
    var filter = document.querySelector("input.table-filter[data-table='" + table.id + "']");
    filter.addEventListener("input", function () { self.filter(filter.value); });
    this.more.addEventListener("click", function () { self.limit += self.pageRows; self.show(); });
    this.show();
  }

  InteractiveTable.prototype.show = function () {
    var rows = this.matching.slice(0, this.limit);
    rows.forEach(function (row) { row.hidden = false; });
    this.body.replaceChildren.apply(this.body, rows);
    var text = rows.length + " of " + this.matching.length + " rows";
    if (this.matching.length < this.all.length) text += " matching (" + this.all.length + " in all)";
    this.count.textContent = text;
    this.more.hidden = rows.length >= this.matching.length;
  };

  InteractiveTable.prototype.sortBy = function (header) {
    var column = header.cellIndex;
    var numeric = header.dataset.type === "number";
    var direction = header.getAttribute("aria-sort") === "ascending" ? -1 : 1;
    var keyed = this.all.map(function (row) { return {row: row, key: cellKey(row, column, numeric)}; });
    keyed.sort(function (a, b) {
      var aMissing = isMissing(a.key, numeric), bMissing = isMissing(b.key, numeric);
      if (aMissing || bMissing) return aMissing - bMissing;  // missing values last, either way
      if (numeric) return direction * (a.key - b.key);
      return direction * a.key.localeCompare(b.key);
    });
    this.all = keyed.map(function (item) { return item.row; });
    this.table.tHead.rows[0].querySelectorAll("th").forEach(function (th) { th.setAttribute("aria-sort", "none"); });
    header.setAttribute("aria-sort", direction === 1 ? "ascending" : "descending");
    this.filter(this.query || "");
  };

  InteractiveTable.prototype.filter = function (text) {
    this.query = text;
    var wanted = text.trim().toLowerCase();
    this.matching = wanted === "" ? this.all : this.all.filter(function (row) {
      if (row.searchText === undefined) row.searchText = row.textContent.toLowerCase();
      return row.searchText.indexOf(wanted) >= 0;
    });
    this.limit = this.pageRows;
    this.show();
  };

  document.querySelectorAll("table.sortable").forEach(function (table) { new InteractiveTable(table); });
  drawFigures();
})();
