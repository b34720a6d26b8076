// The example site's script: a tiny client-side router. With
// `steerd serve ./site --fallback /index.html`, a deep link such as /about is answered
// with index.html, and this script shows which route the browser asked for.
const routes = {
  "/": "home",
  "/about": "about",
  "/docs/getting-started": "getting started",
};

function show(path) {
  const name = routes[path] ?? "not a route of this app";
  const out = document.getElementById("route");
  out.textContent = "route: ";
  const code = document.createElement("code");
  code.textContent = `${path} (${name})`;
  out.append(code);
  for (const a of document.querySelectorAll("nav a")) {
    if (a.getAttribute("href") === path) {
      a.setAttribute("aria-current", "page");
    } else {
      a.removeAttribute("aria-current");
    }
  }
}

document.addEventListener("click", (event) => {
  const a = event.target.closest("a");
  if (!a || a.origin !== location.origin || !(a.pathname in routes)) {
    return;
  }
  event.preventDefault();
  history.pushState(null, "", a.pathname);
  show(a.pathname);
});

window.addEventListener("popstate", () => show(location.pathname));
show(location.pathname);
