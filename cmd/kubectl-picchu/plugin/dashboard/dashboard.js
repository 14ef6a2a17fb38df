// On the pages that follow the cluster (the fleet and the app pages, not an
// action's confirmation or outcome), follows the dashboard's server-sent
// events: at each change, the page asks the dashboard (not the API server)
// for its main section again, rendered from the dashboard's shared watch, and
// morphs the page into it with idiomorph (vendored, see
// hack/vendor-dashboard.sh): the nodes that did not change stay, so the
// keyboard's focus, a link under the pointer and the rows' identity (each has
// an id) survive every refresh. Nothing here builds HTML: the server escapes
// every string.
(function () {
  const main = document.getElementById("main");
  const live = document.getElementById("live");
  if (!main || !main.hasAttribute("data-follow") || !window.EventSource) {
    return;
  }
  let pending = false;
  let last = null;
  let again = false;
  const refresh = async function () {
    if (pending) {
      again = true;
      return;
    }
    pending = true;
    try {
      const r = await fetch(location.href, { headers: { "X-Picchu-Fragment": "main" }, credentials: "same-origin" });
      if (r.ok) {
        const html = await r.text();
        if (html !== last) {
          Idiomorph.morph(main, html, { morphStyle: "innerHTML" });
          last = html;
        }
        live.textContent = "Live: updated " + new Date().toLocaleTimeString();
      } else {
        live.textContent = "The dashboard answered " + r.status + ": " + (await r.text());
      }
    } catch (e) {
      live.textContent = "The dashboard is unreachable: " + e;
    } finally {
      pending = false;
    }
    if (again) {
      again = false;
      refresh();
    }
  };
  const events = new EventSource("/events");
  events.addEventListener("changed", refresh);
  events.onerror = function () {
    live.textContent = "Reconnecting to the dashboard…";
  };
})();
