// Command browser is the end-to-end tests' person at a browser: started by
// kubectl-impersonate as --browser-command with the login URL, it drives a
// real headless Chromium (chromedp) through Dex's pages (the device code
// page, the login form with E2E_USER / E2E_PASSWORD) and oidc-provider's
// (its login form, its consent page, its device confirmation), until the
// login succeeds. Each page is logged by what it asks for ("login",
// "consent", ...), so tests can tell which the provider showed.
// Every start is recorded in E2E_BROWSER_LOG, so tests can tell that no
// browser was started.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: browser URL")
		os.Exit(2)
	}
	url := os.Args[1]
	logf("start %s", url)
	if err := run(url); err != nil {
		logf("error %v", err)
		fmt.Fprintln(os.Stderr, "browser:", err)
		os.Exit(1)
	}
	logf("done %s", url)
}

func logf(format string, args ...any) {
	path := os.Getenv("E2E_BROWSER_LOG")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %s\n", time.Now().Format(time.RFC3339Nano), fmt.Sprintf(format, args...))
}

// state reads what the current page asks for.
const state = `(() => {
  const text = document.body ? document.body.innerText : "";
  if (/Logged in|Login Successful|Sign-in Success/i.test(text)) return "done";
  if (document.querySelector("#login") && document.querySelector("#password")) return "login";
  if (document.querySelector("#user_code")) return "code";
  if (document.querySelector("input[name=prompt][value=login]")) return "op-login";
  if (document.querySelector("input[name=prompt][value=consent]")) return "consent";
  if (document.querySelector("form[id='op.deviceConfirmForm']")) return "op-device";
  if (/error|invalid/i.test(document.title + " " + text.slice(0, 200))) return "error:" + text.slice(0, 200);
  return "wait";
})()`

func run(url string) error {
	// Chromium's profile goes under the e2e session's directory, which
	// test/e2e/run.sh removes however the run ends (a browser killed
	// mid-login cannot remove its own).
	base := os.Getenv("KI_E2E_SESSION")
	if base != "" {
		base = filepath.Join(base, "browser")
		if err := os.MkdirAll(base, 0o700); err != nil {
			return err
		}
	}
	dir, err := os.MkdirTemp(base, "e2e-chromium-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(envOr("E2E_CHROMIUM", "/usr/bin/chromium")),
		chromedp.UserDataDir(dir),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-quic", true),
		// Dex's certificate comes from the tests' own CA.
		chromedp.Flag("ignore-certificate-errors", true),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	taskCtx, cancelTask := chromedp.NewContext(allocCtx)
	defer cancelTask()

	if err := chromedp.Run(taskCtx, chromedp.Navigate(url)); err != nil {
		return fmt.Errorf("opening %s: %w", url, err)
	}
	user, password := os.Getenv("E2E_USER"), os.Getenv("E2E_PASSWORD")
	for range 120 {
		var s, location string
		if err := chromedp.Run(taskCtx, chromedp.Evaluate(state, &s), chromedp.Location(&location)); err != nil {
			// A navigation in flight; look again.
			time.Sleep(250 * time.Millisecond)
			continue
		}
		logf("page %s: %s", location, s)
		switch {
		case s == "done":
			return nil
		case s == "login":
			if err := chromedp.Run(taskCtx,
				chromedp.SendKeys("#login", user, chromedp.ByID),
				chromedp.SendKeys("#password", password, chromedp.ByID),
				chromedp.Click("#submit-login", chromedp.ByID),
			); err != nil {
				return fmt.Errorf("filling the login form: %w", err)
			}
			time.Sleep(500 * time.Millisecond)
		case s == "op-login":
			if err := chromedp.Run(taskCtx,
				chromedp.SendKeys("input[name=login]", user, chromedp.ByQuery),
				chromedp.SendKeys("input[name=password]", password, chromedp.ByQuery),
				chromedp.Click("button[type=submit]", chromedp.ByQuery),
			); err != nil {
				return fmt.Errorf("filling oidc-provider's login form: %w", err)
			}
			time.Sleep(500 * time.Millisecond)
		case s == "consent":
			if err := chromedp.Run(taskCtx, chromedp.Click("button[type=submit]", chromedp.ByQuery)); err != nil {
				return fmt.Errorf("consenting: %w", err)
			}
			time.Sleep(500 * time.Millisecond)
		case s == "op-device":
			if err := chromedp.Run(taskCtx, chromedp.Click("button[form='op.deviceConfirmForm']:not([name=abort])", chromedp.ByQuery)); err != nil {
				return fmt.Errorf("confirming the device: %w", err)
			}
			time.Sleep(500 * time.Millisecond)
		case s == "code":
			if err := chromedp.Run(taskCtx, chromedp.Click("#submit-login", chromedp.ByID)); err != nil {
				return fmt.Errorf("submitting the device code: %w", err)
			}
			time.Sleep(500 * time.Millisecond)
		case strings.HasPrefix(s, "error:"):
			return fmt.Errorf("the provider showed an error at %s: %s", location, s)
		default:
			time.Sleep(250 * time.Millisecond)
		}
	}
	return fmt.Errorf("the login did not finish")
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
