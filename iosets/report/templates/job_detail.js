// iosets report: each job's detail. A row of a table with details gets a "Details" button; the button, a click
// on the row or Enter on it opens one panel under the table: the job's evidence, Drishti-style flags, module
// split, request sizes and I/O over time. Every text is set as text (textContent), never as HTML.
(function () {
  "use strict";

  function element(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function plainTable(caption, columns, rows, className) {
    var table = element("table", "data " + (className || ""));
    table.appendChild(element("caption", "", caption));
    var head = table.createTHead().insertRow();
    columns.forEach(function (name) {
      var th = element("th", "", name);
      th.scope = "col";
      head.appendChild(th);
    });
    var body = table.createTBody();
    rows.forEach(function (cells) {
      var row = body.insertRow();
      cells.forEach(function (text) { row.insertCell().textContent = text; });
    });
    return table;
  }

  function scrolling(table) {  // a wide table scrolls sideways in a narrow window instead of being cut
    var box = element("div", "job-detail-scroll");
    box.appendChild(table);
    return box;
  }

  function JobDetail(data, table) {
    this.details = data;
    this.table = table;
    this.opener = null;
    this.panel = this.buildPanel();
    var self = this;
    var body = table.tBodies[0];
    Array.prototype.forEach.call(body.rows, function (row) { self.enhance(row); });
    new MutationObserver(function (changes) {  // rows the table shows later (paging, sorting, filtering)
      changes.forEach(function (change) {
        Array.prototype.forEach.call(change.addedNodes, function (row) { if (row.nodeName === "TR") self.enhance(row); });
      });
    }).observe(body, {childList: true});
    body.addEventListener("click", function (event) {
      var row = event.target.closest("tr");
      if (row && row.dataset.job !== undefined && !event.target.closest("button")) self.open(row.dataset.job, row.querySelector("button.job-detail-open"));
    });
  }

  JobDetail.prototype.enhance = function (row) {
    if (row.dataset.job !== undefined || !row.cells.length) return;
    var jobId = row.cells[0].dataset.value;
    if (!Object.prototype.hasOwnProperty.call(this.details, jobId)) return;
    row.dataset.job = jobId;
    row.classList.add("has-detail");
    var button = element("button", "job-detail-open");  // its word is drawn by CSS: the cell's text stays the job id
    button.type = "button";
    button.setAttribute("aria-label", "Details of job " + jobId);
    button.setAttribute("aria-controls", this.panel.id);
    button.setAttribute("aria-expanded", "false");
    var self = this;
    button.addEventListener("click", function () { self.open(jobId, button); });
    row.cells[0].appendChild(button);
  };

  JobDetail.prototype.buildPanel = function () {
    var panel = element("div", "job-detail");  // not a <section>: the page's sections are the report's
    panel.setAttribute("role", "region");
    panel.id = this.table.id + "-detail";
    panel.hidden = true;
    var head = element("div", "job-detail-head");
    this.title = element("h3", "job-detail-title");
    this.title.id = panel.id + "-title";
    this.title.tabIndex = -1;
    panel.setAttribute("aria-labelledby", this.title.id);
    var close = element("button", "job-detail-close", "Close");
    close.type = "button";
    var self = this;
    close.addEventListener("click", function () { self.close(); });
    panel.addEventListener("keydown", function (event) { if (event.key === "Escape") self.close(); });
    head.appendChild(this.title);
    head.appendChild(close);
    panel.appendChild(head);
    this.content = element("div", "job-detail-body");
    panel.appendChild(this.content);
    var scroll = this.table.closest(".table-scroll") || this.table;
    scroll.parentNode.insertBefore(panel, scroll.nextSibling);
    return panel;
  };

  JobDetail.prototype.open = function (jobId, button) {
    var job = this.details[jobId];
    if (!job) return;
    if (this.opener) this.opener.setAttribute("aria-expanded", "false");
    this.opener = button || null;
    if (this.opener) this.opener.setAttribute("aria-expanded", "true");
    this.panel.dataset.job = jobId;
    this.title.textContent = job.title;
    this.content.replaceChildren();
    this.content.appendChild(this.evidence(job));
    this.content.appendChild(scrolling(this.flags(job)));
    if (job.modules) this.content.appendChild(scrolling(plainTable("Module split", job.modules.columns, job.modules.rows, "job-detail-modules")));
    var plots = element("div", "job-detail-plots");
    this.content.appendChild(plots);
    job.notes.forEach(function (note) { this.content.appendChild(element("p", "note", note)); }, this);
    this.panel.hidden = false;  // before drawing: a plot takes the size of its box, once every box is laid out
    var boxes = [["sizes", job.sizes], ["activity", job.activity]].map(function (pair) {
      return [this.plotBox(plots, pair[0], pair[1]), pair[1]];
    }, this);
    boxes.forEach(function (box) { if (box[1]) this.draw(box[0], box[1]); }, this);
    this.title.focus({preventScroll: true});
    this.panel.scrollIntoView({block: "nearest"});
  };

  JobDetail.prototype.close = function () {
    this.panel.hidden = true;
    if (this.opener) {
      this.opener.setAttribute("aria-expanded", "false");
      this.opener.focus();
    }
  };

  JobDetail.prototype.evidence = function (job) {
    var block = element("div", "job-detail-evidence");
    block.appendChild(element("h4", "", "Evidence"));
    var list = element("dl", "job-detail-facts");
    job.evidence.forEach(function (pair) {
      list.appendChild(element("dt", "", pair[0]));
      list.appendChild(element("dd", "", pair[1]));
    });
    block.appendChild(list);
    return block;
  };

  JobDetail.prototype.flags = function (job) {
    var rows = job.flags.map(function (flag) {
      var state = flag.raised === null ? "not measured" : flag.raised ? "raised" : "no";
      return [flag.name, state, flag.measured, flag.rule];
    });
    var table = plainTable("Flags (Drishti-style), each with its rule", ["flag", "raised", "measured", "rule"], rows, "job-detail-flags");
    Array.prototype.forEach.call(table.tBodies[0].rows, function (row, i) {
      var flag = job.flags[i];
      row.dataset.flag = flag.name;
      row.dataset.raised = flag.raised === null ? "unknown" : String(flag.raised);
    });
    return table;
  };

  JobDetail.prototype.plotBox = function (into, name, figure) {
    var div = element("div", "job-detail-plot");
    div.id = this.panel.id + "-" + name;
    into.appendChild(div);
    if (!figure) {
      div.appendChild(element("p", "note", name === "sizes" ? "No request sizes in this job's trace." : "No timeline in this job's trace."));
    }
    return div;
  };

  JobDetail.prototype.draw = function (div, figure) {
    div.setAttribute("role", "img");
    div.setAttribute("aria-label", figure.layout.title.text);
    window.iosetsReport.drawFigure(div, figure);  // the page's config, toolbar and Tab order
  };

  document.querySelectorAll("script.job-details[data-table]").forEach(function (node) {
    var table = document.getElementById(node.dataset.table);
    if (table && table.tBodies.length) new JobDetail(JSON.parse(node.textContent), table);
  });
})();
