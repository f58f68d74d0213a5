// How amounts, times and sizes are written, in the page's language.
import {language} from "./i18n.js";

const kMicrosPerUnit = 1_000_000;

// 1234560000 micros, "CNY" -> "¥1,234.56"
export function money(micros, currency) {
  if (micros === null || micros === undefined) return "—";
  const value = micros / kMicrosPerUnit;
  try {
    return new Intl.NumberFormat(language(), {
      style: "currency", currency, minimumFractionDigits: 2, maximumFractionDigits: 4,
    }).format(value);
  } catch {
    return `${value.toFixed(2)} ${currency}`;
  }
}

export function dateTime(rfc3339) {
  if (!rfc3339) return "—";
  return new Date(rfc3339).toLocaleString(language());
}

// Seconds -> "2 h 05 min", "40 s"
export function duration(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  const minutes = Math.floor(s / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  return `${hours} h ${String(minutes % 60).padStart(2, "0")} min`;
}

export function megabytes(mb) {
  return mb >= 1024 ? `${Math.round(mb / 1024)} GB` : `${mb} MB`;
}

export function percent(value) {
  return value === null || value === undefined ? "—" : `${Math.round(value)} %`;
}
