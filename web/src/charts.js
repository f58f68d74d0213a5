// An instance's live GPU charts (uPlot, loaded by index.html as window.uPlot): utilisation,
// memory, temperature and power of the GPUs it holds, from GET /v1/metrics/query. The last hour
// is read at the agents' sampling resolution; longer ranges come from the minute and hour rollups
// (the API picks the finest resolution that covers the range).
import {api} from "./api.js";
import {h, replace} from "./dom.js";
import {t} from "./i18n.js";

const kMetrics = [
  {metric: "gpu_util", label: "chart.util", unit: "%"},
  {metric: "fb_used", label: "chart.memory", unit: "MiB"},
  {metric: "gpu_temp", label: "chart.temperature", unit: "°C"},
  {metric: "power_usage", label: "chart.power", unit: "W"},
];

// Each range, and the step of its points (at most a few hundred per chart).
export const kRanges = {"1h": {hours: 1, step: "15s"}, "24h": {hours: 24, step: "5m"},
                        "7d": {hours: 24 * 7, step: "1h"}};

function timeRange(range) {
  const to = Date.now() / 1000;
  return [to - kRanges[range].hours * 3600, to];
}

async function series(instanceId, metric, range) {
  const from = new Date(timeRange(range)[0] * 1000).toISOString();
  const answer = await api("GET", `/v1/metrics/query?metric=${metric}&instance=${encodeURIComponent(instanceId)}` +
                                  `&from=${from}&step=${kRanges[range].step}&agg=avg`);
  const xs = answer.points.map((p) => Date.parse(p.t) / 1000);
  const ys = answer.points.map((p) => p.value);
  return {xs, ys, resolution: answer.resolution};
}

// Draws the four charts into `container` for the range ("1h", "24h", "7d"); returns how many
// points they have in all (0: no samples yet).
export async function drawGpuCharts(container, instanceId, range) {
  const answers = await Promise.all(kMetrics.map((m) => series(instanceId, m.metric, range)));
  const width = Math.max(280, Math.floor((container.clientWidth || 1000) / 2) - 24);
  replace(container, kMetrics.map((m, i) => {
    const {xs, ys} = answers[i];
    const box = h("div", {class: "chart", dataset: {metric: m.metric, points: xs.length}},
                  h("h3", {}, `${t(m.label)} (${m.unit})`));
    if (xs.length === 0) {
      box.append(h("p", {class: "empty"}, t("chart.no_data")));
    } else if (window.uPlot) {
      // eslint-disable-next-line no-new
      new window.uPlot({
        width, height: 180, legend: {show: false},
        scales: {x: {time: true, range: () => timeRange(range)}},
        series: [{}, {label: t(m.label), stroke: "#1f6feb", width: 1.5, fill: "rgba(31,111,235,0.08)"}],
        axes: [{}, {size: 56}],
      }, [xs, ys], box);
    }
    return box;
  }));
  return answers.reduce((sum, a) => sum + a.xs.length, 0);
}
