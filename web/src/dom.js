// Building the page's elements. Text always goes in as text (textContent, attribute values), never
// as HTML: a name a tenant chose, however it is spelt, renders as the characters it is.

// h("a", {href: "#/x", class: "link", onclick: fn}, "text", child, [more children])
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      element.addEventListener(name.slice(2), value);
    } else if (name === "dataset") {
      Object.assign(element.dataset, value);
    } else if (name === "value") {
      element.value = value;
    } else {
      element.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(element, child);
    else element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

// Replaces everything inside `element` with `children`.
export function replace(element, ...children) {
  element.replaceChildren();
  append(element, children);
  return element;
}

// A table: `columns` are [heading, (row) => cell content]; `rows` the items.
export function table(columns, rows, {empty = "", rowAttributes} = {}) {
  if (rows.length === 0 && empty) return h("p", {class: "empty"}, empty);
  return h("table", {},
    h("thead", {}, h("tr", {}, columns.map(([heading]) => h("th", {}, heading)))),
    h("tbody", {}, rows.map((row) =>
      h("tr", rowAttributes ? rowAttributes(row) : {},
        columns.map(([, cell]) => h("td", {}, cell(row)))))));
}
