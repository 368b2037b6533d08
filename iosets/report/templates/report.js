// iosets report: draw each figure from its JSON; sort, filter and page through interactive tables; keep the page
// inside itself (no window, no link out) and keyboard-friendly (mode bars out of the Tab order, a skip link).
(function () {
  "use strict";
  var options = JSON.parse(document.getElementById("plot-options").textContent);
  var MIN_CELL_PX = 200;  // narrowest subplot of a grid of subplots; a narrower screen stacks the grid's cells
  var DEFAULT_HEIGHT = 450;  // plotly.js's height of a figure whose layout sets none
  var grids = [];  // figures drawn as a grid of subplots: {div, figure, columns} (redrawn when the width changes)

  // Nothing in the page opens a window or leaves it: window.open (plotly.js's "Share chart", links of plot text
  // with a popup) returns no window, and a link out of the page does nothing. Saving a PNG (a blob: link with
  // a download attribute, clicked by plotly.js) and the page's own anchors still work.
  window.open = function () { return null; };
  function leavesPage(link) {
    var href = link.getAttribute("href") || link.getAttribute("xlink:href") || "";
    if (href === "" || href.charAt(0) === "#") return false;
    return !(link.hasAttribute("download") && /^(blob|data):/.test(href));
  }
  ["click", "auxclick"].forEach(function (type) {
    document.addEventListener(type, function (event) {
      var link = event.target.closest ? event.target.closest("a") : null;
      if (link && leavesPage(link)) event.preventDefault();
    }, true);
  });

  function untab(div) {  // mode bar buttons stay clickable, out of the Tab order: the page has ~8 per plot
    div.querySelectorAll(".modebar-btn").forEach(function (button) { button.tabIndex = -1; });
  }

  // A grid of subplots (axes with explicit domains) wider than the screen allows is redrawn with fewer columns:
  // each cell keeps its size in pixels, and the annotations (titles, notes) in a cell's slot move with it.
  function slots(ranges) {  // [[start, end], ...] of distinct domains, sorted: the slot boundaries around each
    var distinct = [];
    ranges.forEach(function (range) {
      if (!distinct.some(function (d) { return Math.abs(d[0] - range[0]) < 1e-6; })) distinct.push(range);
    });
    distinct.sort(function (a, b) { return a[0] - b[0]; });
    var edges = [0];
    for (var i = 1; i < distinct.length; i++) edges.push((distinct[i - 1][1] + distinct[i][0]) / 2);
    edges.push(1);
    return {starts: distinct.map(function (d) { return d[0]; }), edges: edges};
  }

  function slotOf(grid, value) {
    for (var i = 0; i < grid.edges.length - 1; i++) if (value >= grid.edges[i] && value <= grid.edges[i + 1]) return i;
    return -1;
  }

  function indexOf(grid, start) {
    for (var i = 0; i < grid.starts.length; i++) if (Math.abs(grid.starts[i] - start) < 1e-6) return i;
    return -1;
  }

  function gridCells(layout) {
    var cells = [];
    Object.keys(layout).forEach(function (key) {
      var match = /^xaxis(\d*)$/.exec(key);
      if (!match || !layout[key] || !layout[key].domain) return;
      var yKey = "yaxis" + (layout[key].anchor ? layout[key].anchor.replace(/^y/, "") : match[1]);
      if (!layout[yKey] || !layout[yKey].domain) return;
      cells.push({x: key, y: yKey, xDomain: layout[key].domain, yDomain: layout[yKey].domain});
    });
    return cells;
  }

  function columnsOf(figure) {
    var cells = gridCells(figure.layout);
    return cells.length > 1 ? slots(cells.map(function (c) { return c.xDomain; })).starts.length : 1;
  }

  function regrid(layout, columns) {
    var cells = gridCells(layout);
    var xs = slots(cells.map(function (c) { return c.xDomain; }));
    var ys = slots(cells.map(function (c) { return c.yDomain; }));
    var oldRows = ys.starts.length;
    cells.forEach(function (cell) {
      cell.column = indexOf(xs, cell.xDomain[0]);
      cell.row = oldRows - 1 - indexOf(ys, cell.yDomain[0]);  // 0: the top row
    });
    cells.sort(function (a, b) { return a.row - b.row || a.column - b.column; });
    var rows = Math.ceil(cells.length / columns);
    var margin = layout.margin || {};
    var plotHeight = (layout.height || DEFAULT_HEIGHT) - (margin.t || 0) - (margin.b || 0);
    var out = JSON.parse(JSON.stringify(layout));
    out.height = Math.round(plotHeight * rows / oldRows + (margin.t || 0) + (margin.b || 0));
    var moves = {};  // "column,row" of an old slot -> its affine maps to the new slot
    cells.forEach(function (cell, index) {
      var column = index % columns, row = Math.floor(index / columns);
      var oldX = [xs.edges[cell.column], xs.edges[cell.column + 1]];
      var oldY = [ys.edges[oldRows - 1 - cell.row], ys.edges[oldRows - cell.row]];
      var newX = [column / columns, (column + 1) / columns], newY = [1 - (row + 1) / rows, 1 - row / rows];
      var move = {
        x: function (v) { return newX[0] + (v - oldX[0]) * (newX[1] - newX[0]) / (oldX[1] - oldX[0]); },
        y: function (v) { return newY[0] + (v - oldY[0]) * (newY[1] - newY[0]) / (oldY[1] - oldY[0]); },
      };
      moves[cell.column + "," + cell.row] = move;
      out[cell.x].domain = cell.xDomain.map(move.x);
      out[cell.y].domain = cell.yDomain.map(move.y);
    });
    function moveOf(x, y) {
      var column = slotOf(xs, x), row = oldRows - 1 - slotOf(ys, y);
      return moves[column + "," + row];
    }
    (out.annotations || []).forEach(function (note) {
      if ((note.xref || "paper") !== "paper" || (note.yref || "paper") !== "paper") return;
      var move = moveOf(note.x, note.y);
      if (move) { note.x = move.x(note.x); note.y = move.y(note.y); }
    });
    (out.shapes || []).forEach(function (shape) {
      if (shape.xref !== "paper" || shape.yref !== "paper") return;
      var move = moveOf((shape.x0 + shape.x1) / 2, (shape.y0 + shape.y1) / 2);
      if (move) {
        shape.x0 = move.x(shape.x0); shape.x1 = move.x(shape.x1);
        shape.y0 = move.y(shape.y0); shape.y1 = move.y(shape.y1);
      }
    });
    return out;
  }

  function fitColumns(grid) {  // columns of a grid figure that fit its div now
    return Math.max(1, Math.min(grid.columns, Math.floor(grid.div.clientWidth / MIN_CELL_PX)));
  }

  function layoutFor(grid, columns) {
    var layout = Object.assign({}, options.layout, grid.figure.layout);
    return columns < grid.columns ? regrid(layout, columns) : layout;
  }

  // Draw ``figure`` ({data, layout}) into ``div`` with the page's config: what every figure of the page goes through,
  // and what another script of the page (templates/job_detail.js) calls as iosetsReport.drawFigure.
  function drawFigure(div, figure) {
    var config = Object.assign({}, options.config, {toImageButtonOptions: {format: "png", filename: div.id}});
    var grid = {div: div, figure: figure, columns: columnsOf(figure)};
    var layout = Object.assign({}, options.layout, figure.layout);
    if (grid.columns > 1) {
      grid.drawn = fitColumns(grid);
      layout = layoutFor(grid, grid.drawn);
      grids.push(grid);
    }
    return Plotly.newPlot(div, figure.data, layout, config).then(function () {
      untab(div);
      div.on("plotly_afterplot", function () { untab(div); });  // redraws (zoom, resize) may remake the mode bar
    });
  }

  function draw(div) {
    return drawFigure(div, JSON.parse(document.getElementById(div.dataset.figure).textContent));
  }

  function regridOnResize() {
    var pending = null;
    window.addEventListener("resize", function () {
      if (pending !== null) window.cancelAnimationFrame(pending);
      pending = window.requestAnimationFrame(function () {
        pending = null;
        grids.forEach(function (grid) {
          var columns = fitColumns(grid);
          if (columns === grid.drawn) return;
          grid.drawn = columns;
          Plotly.react(grid.div, grid.figure.data, layoutFor(grid, columns), grid.div._context);
        });
      });
    });
  }

  // Once every plot is drawn the page says so (data-plots-drawn: their number), so that a test or a benchmark
  // waits on that instead of guessing; a failed drawing sets data-plots-failed and is logged.
  function drawFigures() {
    var divs = Array.prototype.slice.call(document.querySelectorAll("div.plot[data-figure]"));
    var root = document.documentElement;
    Promise.all(divs.map(draw)).then(function () {
      root.setAttribute("data-plots-drawn", String(divs.length));
      document.dispatchEvent(new CustomEvent("iosets:plots-drawn", {detail: divs.length}));
    }, function (error) {
      root.setAttribute("data-plots-failed", String(error));
      console.error("iosets report: a plot failed to draw:", error);
    });
    regridOnResize();
  }

  function skipLink() {  // the page's first stop: moves the focus to its target (the jobs table's filter)
    var link = document.querySelector("a.skip-link");
    if (!link) return;
    link.addEventListener("click", function (event) {
      var target = document.getElementById(link.getAttribute("href").slice(1));
      if (!target) return;
      event.preventDefault();
      target.focus();
    });
  }

  function count(n) { return n.toLocaleString("en-US"); }  // as the page's other counts (format_count)

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
    var text = count(rows.length) + " of " + count(this.matching.length) + (this.matching.length === 1 ? " row" : " rows");
    if (this.matching.length < this.all.length) text += " matching (" + count(this.all.length) + " in all)";
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

  window.iosetsReport = {options: options, drawFigure: drawFigure};
  skipLink();
  document.querySelectorAll("table.sortable").forEach(function (table) { new InteractiveTable(table); });
  drawFigures();
})();
