// Signing in: the server answers 401 until the page has a session. The
// page then asks for an API key once, trades it for a session cookie
// (POST /api/v1/session: HttpOnly, so no script here can read it, and
// SameSite=Strict) and forgets the key. The key is never put in a URL or
// kept by the page.

let pending = null; // the sign-in in progress, shared by every caller

// signIn shows the sign-in form and resolves once the server has accepted
// a key. why is shown above the form (the server's reason for the 401).
export function signIn(why) {
  if (!pending) pending = askForKey(why).finally(() => (pending = null));
  return pending;
}

function askForKey(why) {
  return new Promise((resolve) => {
    const backdrop = document.createElement("div");
    backdrop.className = "login-backdrop";
    backdrop.innerHTML = `
      <form class="login" id="login-form" autocomplete="off">
        <h2>Sign in to spool</h2>
        <p class="muted" id="login-why"></p>
        <label for="login-key">API key</label>
        <input id="login-key" name="key" type="password" placeholder="spool_…" spellcheck="false" required autofocus>
        <p class="hint">On the server's machine the first admin key is in <code>spool-data/admin.key</code>.
          An admin makes more with <code>spool keys create --role read --name you</code>.</p>
        <div class="error-box" id="login-error" role="alert"></div>
        <button class="btn primary" type="submit">Sign in</button>
      </form>`;
    document.body.append(backdrop);
    // The server's reason matters when a session ended or a key was
    // revoked; a first visit just needs a key.
    const first = !why || why.startsWith("an API key is needed");
    backdrop.querySelector("#login-why").textContent = first ? "This server needs an API key to show its jobs." : why;
    const input = backdrop.querySelector("#login-key");
    input.focus();
    backdrop.querySelector("form").addEventListener("submit", async (e) => {
      e.preventDefault();
      const error = backdrop.querySelector("#login-error");
      error.textContent = "";
      try {
        const who = await send("POST", { key: input.value.trim() });
        input.value = "";
        backdrop.remove();
        showAccount(who);
        resolve(who);
      } catch (err) {
        error.textContent = err.message;
        input.select();
      }
    });
  });
}

// send calls /api/v1/session without the retry-after-sign-in of api():
// this is the sign-in.
async function send(method, body) {
  let resp;
  try {
    resp = await fetch("/api/v1/session", {
      method,
      headers: { Accept: "application/json", "Content-Type": "application/json" },
      body: body && JSON.stringify(body),
    });
  } catch (e) {
    throw new Error("cannot reach the spool server: " + e.message);
  }
  if (resp.status === 204) return null;
  const data = await resp.json().catch(() => null);
  if (!resp.ok) throw new Error((data && data.error) || `${resp.status} ${resp.statusText}`);
  return data;
}

// showAccount puts who is signed in, and a way out, in the top bar.
export function showAccount(who) {
  const el = document.querySelector("#account");
  if (!el || !who) return;
  el.replaceChildren();
  if (who.auth_disabled) {
    el.textContent = "auth disabled";
    el.title = "This server lets anyone in (auth.disabled). Fine on your own machine, nowhere else.";
    return;
  }
  const name = document.createElement("span");
  name.className = "muted";
  name.textContent = `${who.name} · ${who.role}`;
  const out = document.createElement("button");
  out.className = "btn small";
  out.type = "button";
  out.id = "logout";
  out.textContent = "Log out";
  out.addEventListener("click", async () => {
    await send("DELETE").catch(() => {});
    location.reload();
  });
  el.append(name, out);
}
