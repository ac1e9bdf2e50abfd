// The report's timeline as SVG, written directly: one row per task on a common time
// axis, bars for start-up, restore, kept training, saves, lost work and the task's end, marks
// for notices. No plotting library: the tool stays one C++ binary, and an SVG opens in
// every browser and renders sharp in a README.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <string>

#include "report_views.hpp"
#include "time_text.hpp"

namespace trainctl {
namespace {

constexpr int kLeft = 120, kWidth = 760, kRight = 280, kRow = 30, kTop = 58, kBar = 18;

struct colour {
  const char* fill;
  const char* label;
};
constexpr colour kStartup{"#9e9e9e", "start-up"}, kKept{"#2e7d32", "training (kept)"}, kSave{"#1565c0", "save"},
    kLost{"#c62828", "lost work"}, kHung{"#6a1b9a", "hung"}, kEnd{"#cfcfcf", "task end"},
    kQueue{"#f0a202", "queued (no task running)"}, kRestore{"#5c6bc0", "restore"},
    kUnsaved{"#a5d6a7", "training (not saved yet)"};

// Only our own text goes in (task names of digits and '_', reasons of words); escaped anyway.
std::string xml(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string num(double v) {
  char out[32];
  std::snprintf(out, sizeof out, "%.1f", v);
  return out;
}

// A tick every 10 s .. 1 day, whichever gives at most 10 over the span.
std::int64_t tick_ms(std::int64_t span_ms) {
  for (const std::int64_t s : {10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400})
    if (span_ms / (s * 1000) <= 10) return s * 1000;
  return span_ms / 10 + 1;
}

std::string tick_label(std::int64_t ms) {
  const std::int64_t s = ms / 1000;
  char out[32];
  if (s < 60)
    std::snprintf(out, sizeof out, "+%llds", static_cast<long long>(s));
  else if (s < 3600 && s % 60 == 0)
    std::snprintf(out, sizeof out, "+%lldm", static_cast<long long>(s / 60));
  else if (s < 3600)
    std::snprintf(out, sizeof out, "+%lldm%02llds", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  else
    std::snprintf(out, sizeof out, "+%lldh%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60));
  return out;
}

// The drawing so far, and where a time falls on its axis.
struct svg_canvas {
  std::string s;
  std::int64_t from = 0;
  double scale = 1;
  double x(std::int64_t ms) const { return kLeft + static_cast<double>(ms - from) * scale; }
  // A bar of the row at `y` from a to b, its tooltip `tip`.
  void bar(std::int64_t a, std::int64_t b, double y, const colour& c, const std::string& tip) {
    if (b <= a) return;
    s += "<rect x=\"" + num(x(a)) + "\" y=\"" + num(y) + "\" width=\"" + num(std::max(1.0, x(b) - x(a))) +
         "\" height=\"" + std::to_string(kBar) + "\" fill=\"" + c.fill + "\"><title>" + xml(tip) + "</title></rect>\n";
  }
};

// The time axis: ticks from the axis start to `to`, over `rows` rows.
void draw_axis(svg_canvas& c, std::int64_t to, std::size_t rows) {
  const std::int64_t step = tick_ms(to - c.from);
  for (std::int64_t t = 0; c.from + t <= to; t += step) {
    const std::string xs = num(c.x(c.from + t));
    c.s += "<line x1=\"" + xs + "\" y1=\"" + std::to_string(kTop - 8) + "\" x2=\"" + xs + "\" y2=\"" +
           std::to_string(kTop + static_cast<int>(rows) * kRow) + "\" stroke=\"#e0e0e0\"/>\n";
    c.s += "<text x=\"" + xs + "\" y=\"" + std::to_string(kTop - 12) + "\" text-anchor=\"middle\" fill=\"#555\">" +
           tick_label(t) + "</text>\n";
  }
}

// How the task ended, for the right of the axis, with the straggler's price beside it.
std::string ended_text(const task_report& t) {
  std::string ended = !t.exit_reason.empty() ? t.exit_reason : t.running ? std::string("running") : t.task.state;
  if (!t.straggler.shows()) return ended;
  const double node_s = t.straggler.wall_s * std::max(1, t.task.nodes);
  char cost[96];
  if (node_s < 3600)
    std::snprintf(cost, sizeof cost, "; straggler rank %d: %s%.0f node-s", t.straggler.slowest_rank,
                  t.straggler.marked ? "" : ">= ", node_s);
  else
    std::snprintf(cost, sizeof cost, "; straggler rank %d: %s%.1f node-h", t.straggler.slowest_rank,
                  t.straggler.marked ? "" : ">= ", node_s / 3600);
  return ended + cost;
}

// One task's row at `y`: its queue, start-up, restore, training, saves, end and notices.
void draw_task(svg_canvas& c, const task_report& t, double y) {
  c.s += "<text x=\"" + std::to_string(kLeft - 8) + "\" y=\"" + num(y + kBar - 5) + "\" text-anchor=\"end\">" +
         xml(t.task.name) + "</text>\n";
  const std::int64_t start = t.task.start_ms, end = t.task.end_ms;
  if (t.queue_s > 0) {
    const std::int64_t q = start - static_cast<std::int64_t>(t.queue_s * 1000);
    c.s += "<line x1=\"" + num(c.x(q)) + "\" y1=\"" + num(y + kBar / 2.0) + "\" x2=\"" + num(c.x(start)) + "\" y2=\"" +
           num(y + kBar / 2.0) + "\" stroke=\"" + kQueue.fill + "\" stroke-width=\"3\" stroke-dasharray=\"4 3\"/>\n";
  }
  const std::int64_t first = t.first_step_ms != 0 ? t.first_step_ms : end;
  // The restore ends the start-up (the loop loads its checkpoint, then trains).
  const std::int64_t restored = first - static_cast<std::int64_t>(t.restore_s * 1000);
  c.bar(start, restored, y, kStartup, t.task.name + ": start-up");
  if (t.restore_s > 0) c.bar(restored, first, y, kRestore, t.task.name + ": restore");
  for (const auto& sp : t.training)
    c.bar(sp.from, sp.to, y,
          sp.kept      ? kKept
          : sp.hung    ? kHung
          : sp.unsaved ? kUnsaved
                       : kLost,
          t.task.name + (sp.kept      ? ": training, kept"
                         : sp.hung    ? ": hung"
                         : sp.unsaved ? ": training, not saved yet"
                                      : ": training, lost"));
  const std::int64_t until = t.end_event_ms != 0 ? t.end_event_ms : end;
  for (const auto& sv : t.saves)
    c.bar(sv.begin_ms, sv.end_ms != 0 ? sv.end_ms : until, y, sv.end_ms != 0 || t.running ? kSave : kLost,
          t.task.name + ": save at step " + std::to_string(sv.step) + " (" + sv.reason + ")" +
              (sv.end_ms != 0 ? ""
               : t.running    ? ", going on"
                              : ", never finished"));
  if (t.first_step_ms != 0) c.bar(until, end, y, kEnd, t.task.name + ": end");
  c.s += "<text x=\"" + std::to_string(kLeft + kWidth + 10) + "\" y=\"" + num(y + kBar - 5) + "\" fill=\"#333\">" +
         xml(ended_text(t)) + "</text>\n";
  for (const auto& n : t.notices) {
    const double nx = c.x(n.first);
    c.s += "<path d=\"M" + num(nx - 5) + " " + num(y - 6) + " L" + num(nx + 5) + " " + num(y - 6) + " L" + num(nx) +
           " " + num(y + 2) + " Z\" fill=\"#ff6f00\"><title>" + xml(t.task.name + ": notice, " + n.second) +
           "</title></path>\n";
  }
}

// The legend at `ly`, and the axis start's date below it.
void draw_legend(svg_canvas& c, int ly) {
  int lx = kLeft;
  for (const colour* k : {&kStartup, &kRestore, &kKept, &kUnsaved, &kSave, &kLost, &kHung, &kEnd, &kQueue}) {
    c.s += "<rect x=\"" + std::to_string(lx) + "\" y=\"" + std::to_string(ly - 10) +
           "\" width=\"12\" height=\"12\" fill=\"" + k->fill + "\"/><text x=\"" + std::to_string(lx + 16) + "\" y=\"" +
           std::to_string(ly) + "\">" + k->label + "</text>\n";
    lx += 30 + static_cast<int>(std::string(k->label).size()) * 7;
  }
  c.s += "<path d=\"M" + std::to_string(lx) + " " + std::to_string(ly - 10) + " L" + std::to_string(lx + 10) + " " +
         std::to_string(ly - 10) + " L" + std::to_string(lx + 5) + " " + std::to_string(ly) +
         " Z\" fill=\"#ff6f00\"/><text x=\"" + std::to_string(lx + 16) + "\" y=\"" + std::to_string(ly) +
         "\">notice</text>\n";
  const std::string when = time_text(c.from / 1000, "time from %Y-%m-%d %H:%M:%S", time_zone::local);
  c.s += "<text x=\"" + std::to_string(kLeft) + "\" y=\"" + std::to_string(ly + 24) + "\" fill=\"#555\">" + when +
         "</text>\n</svg>\n";
}

}  // namespace

std::string run_report_svg(const run_report& r) {
  std::size_t rows = 0;
  for (const auto& t : r.tasks) rows += t.task.start_ms != 0;
  // The axis starts where the first task became ready, so the queue before it shows too.
  svg_canvas c;
  c.from = r.first_ms;
  const std::int64_t to = std::max(r.last_ms, r.first_ms + 1000);
  for (const auto& t : r.tasks)
    if (t.task.start_ms != 0 && t.queue_s > 0)
      c.from = std::min(c.from, t.task.start_ms - static_cast<std::int64_t>(t.queue_s * 1000));
  c.scale = static_cast<double>(kWidth) / static_cast<double>(to - c.from);
  const int height = kTop + static_cast<int>(rows) * kRow + 70;
  c.s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
        std::to_string(kLeft + kWidth + kRight) + "\" height=\"" + std::to_string(height) +
        "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  c.s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  char title[256];
  std::snprintf(title, sizeof title, "job %s: goodput %.1f%% of %.2f node-hours", r.job.c_str(), 100.0 * r.goodput(),
                r.allocated / 3600);
  c.s += "<text x=\"" + std::to_string(kLeft) + "\" y=\"20\" font-size=\"15\" font-weight=\"bold\">" + xml(title) +
         "</text>\n";
  draw_axis(c, to, rows);
  int row = 0;
  for (const auto& t : r.tasks)
    if (t.task.start_ms != 0) draw_task(c, t, kTop + row++ * kRow + (kRow - kBar) / 2.0);
  draw_legend(c, kTop + static_cast<int>(rows) * kRow + 22);
  return c.s;
}

}  // namespace trainctl
