// Command soak runs the impersonating proxy for a while as production
// would, and reports: two replicas on 127.0.0.1 in front of a kube-apiserver
// (hack/soak.sh starts it), a round-robin client sending a mixed load of
// get, list and watch requests as 20 users at a fixed rate, their tokens
// re-issued every 30 s by a test issuer whose signing key is rotated
// halfway, and one replica restarted at 40 % of the run (its requests cut
// by the restart are retried once on the other); the provider down for a
// minute from 60 %; kube-apiserver restarted at 80 % (what it cuts, and
// what is refused until the replicas' views are current again, is retried
// until answered). Every 10 s it samples
// p50/p99 latency, errors and each replica's RSS. It fails on any error
// that is not a retried restart cut, and on RSS growth of the replica that
// runs throughout beyond the stated bound.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kubectl-impersonate/kubectl-impersonate/internal/testissuer"
)

// The bounds the run is held to (docs/proxy.md states them).
const (
	// maxSlopeMiBPerMin bounds the fitted RSS slope of the replica that
	// runs throughout, after the first fifth of the run (warm-up).
	maxSlopeMiBPerMin = 1.0
	// maxGrowthMiB bounds its RSS growth over the same span.
	maxGrowthMiB = 16.0
	users        = 20
	// outageFor is how long the provider is down.
	outageFor = 60 * time.Second
	// restartGrace is how long after kube-apiserver is ready again a failed
	// request still counts as cut by its restart: the replicas' watches of
	// grants reconnect with client-go's backoff (up to 30 s apart).
	restartGrace = 45 * time.Second
	// retryFor bounds the retries of one request cut by the restart.
	retryFor = 2 * time.Minute
)

// apiRestart is kube-apiserver's restart, while it runs and restartGrace
// after.
type apiRestart struct {
	on    atomic.Bool
	until atomic.Int64
	// back is when it was ready again; firstElevated when a request under a
	// grant was next served (the replicas' views current again).
	back, firstElevated atomic.Int64
}

// active says whether a failure now is the restart's.
func (a *apiRestart) active() bool { return a.on.Load() || time.Now().UnixNano() < a.until.Load() }

type options struct {
	bin, upstreamKubeconfig, cert, key, ca, out string
	restartAPIServer                            string
	api, adminToken                             string
	duration                                    time.Duration
	rate                                        int
}

// restartsAPIServer says whether the run restarts kube-apiserver: given
// the command, and 3 minutes or more (time for the replicas to recover).
func (o options) restartsAPIServer() bool {
	return o.restartAPIServer != "" && o.duration >= 3*time.Minute
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "", "kubectl-impersonate-apiserver")
	flag.StringVar(&o.upstreamKubeconfig, "upstream-kubeconfig", "", "the proxy's own credential")
	flag.StringVar(&o.cert, "tls-cert-file", "", "the replicas' serving certificate (also the API server's CA)")
	flag.StringVar(&o.key, "tls-private-key-file", "", "its key")
	flag.StringVar(&o.ca, "ca", "", "the CA of the replicas' certificate")
	flag.StringVar(&o.out, "out", "", "write the Markdown report here too")
	flag.DurationVar(&o.duration, "duration", 10*time.Minute, "how long to run")
	flag.IntVar(&o.rate, "rate", 200, "requests per second")
	flag.StringVar(&o.api, "api", "", "kube-apiserver's URL, where the admin makes sudo grants")
	flag.StringVar(&o.adminToken, "admin-token", "", "the admin's token")
	flag.StringVar(&o.restartAPIServer, "restart-apiserver", "", "a command that restarts kube-apiserver and "+
		"returns once it is ready (hack/lib-apiserver.sh's apiserver.sh); run at 4/5 of a run of 3 minutes or more")
	flag.Parse()
	report, err := run(o)
	fmt.Print(report)
	if o.out != "" {
		_ = os.WriteFile(o.out, []byte(report), 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

// replica is one proxy process.
type replica struct {
	url, port string
	args      []string
	log       *os.File
	mu        sync.Mutex
	cmd       *exec.Cmd
}

func (r *replica) start(bin string) error {
	cmd := exec.Command(bin, r.args...)
	cmd.Stdout, cmd.Stderr = r.log, r.log
	if err := cmd.Start(); err != nil {
		return err
	}
	r.mu.Lock()
	r.cmd = cmd
	r.mu.Unlock()
	return nil
}

// pid is the running process's, 0 while there is none.
func (r *replica) pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil || r.cmd.Process == nil {
		return 0
	}
	return r.cmd.Process.Pid
}

func (r *replica) stop() {
	r.mu.Lock()
	cmd := r.cmd
	r.cmd = nil
	r.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// rssMiB is the process's resident set (VmRSS), in MiB.
func rssMiB(pid int) float64 {
	if pid == 0 {
		return math.NaN()
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return math.NaN()
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return math.NaN()
}

type sample struct {
	at           time.Duration
	n, errs      int
	retried      int
	p50, p99     time.Duration
	rss1, rss2   float64
	event        string
	inFlightPeak int64
}

func run(o options) (string, error) {
	is, err := testissuer.Start()
	if err != nil {
		return "", err
	}
	defer is.Close()
	sudo := &sudoRun{api: o.api, adminToken: o.adminToken}
	dir, err := os.MkdirTemp("", "ki-soak-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	authn := filepath.Join(dir, "authn.yaml")
	if err := os.WriteFile(authn, []byte(is.AuthenticationConfig(`    username: {claim: email, prefix: ""}
    groups: {claim: groups, prefix: ""}
`)), 0o600); err != nil {
		return "", err
	}
	pem, err := os.ReadFile(o.ca)
	if err != nil {
		return "", err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, MaxIdleConnsPerHost: 64, ForceAttemptHTTP2: true}
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	sudo.client = client

	var replicas []*replica
	for i := range 2 {
		port, err := freePort()
		if err != nil {
			return "", err
		}
		log, err := os.Create(filepath.Join(dir, fmt.Sprintf("replica-%d.log", i+1)))
		if err != nil {
			return "", err
		}
		r := &replica{url: "https://127.0.0.1:" + port, port: port, log: log, args: []string{"proxy", "--listen=127.0.0.1:" + port,
			"--tls-cert-file=" + o.cert, "--tls-private-key-file=" + o.key, "--upstream-kubeconfig=" + o.upstreamKubeconfig,
			"--authentication-config=" + authn, "--max-requests-inflight=400", "--sudo"}}
		if err := r.start(o.bin); err != nil {
			return "", err
		}
		defer r.stop()
		replicas = append(replicas, r)
	}
	for _, r := range replicas {
		if err := waitReady(client, r.url); err != nil {
			return "", err
		}
	}

	// Tokens of the 20 users, re-issued every 30 s.
	var tokens atomic.Pointer[[]string]
	mint := func() error {
		ts := make([]string, users)
		for i := range ts {
			t, err := is.Mint(is.Claims(fmt.Sprintf("user-%d", i), "kube", 2*time.Minute,
				map[string]any{"email": fmt.Sprintf("soak-%d@example.com", i), "email_verified": true, "groups": []any{"soak"}}), testissuer.Valid)
			if err != nil {
				return err
			}
			ts[i] = t
		}
		tokens.Store(&ts)
		return nil
	}
	if err := mint(); err != nil {
		return "", err
	}

	// Interrupted (Ctrl-C, the script's trap), it stops early and still
	// stops its replicas.
	sig, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(sig, o.duration)
	defer cancel()
	var mu sync.Mutex
	var lat []time.Duration
	errs, retried, total := 0, 0, 0
	var errSamples []string
	var inFlight, peak atomic.Int64
	paths := []string{"/api/v1/namespaces/team-a/configmaps/soak", "/api/v1/namespaces/team-a/pods?limit=50",
		"/api/v1/namespaces/team-a/configmaps?limit=50", "/api/v1/namespaces/team-a/configmaps?watch=1&timeoutSeconds=2"}
	var elevated func(n int, g grant)
	restart := &apiRestart{}
	request := func(n int) {
		defer inFlight.Add(-1)
		path := paths[[]int{0, 0, 0, 0, 1, 1, 1, 2, 2, 3}[n%10]]
		tok := (*tokens.Load())[n%users]
		send := func(r *replica) (int, time.Duration, error) {
			start := time.Now()
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, r.url+path, nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := client.Do(req)
			if err != nil {
				return 0, 0, err
			}
			d := time.Since(start) // to the headers: a watch then streams
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode, d, nil
		}
		if n%20 == 19 {
			if g, ok := sudo.pick(n); ok {
				elevated(n, g)
				return
			}
		}
		code, d, err := send(replicas[n%2])
		retry := false
		if err != nil {
			// A restart cuts the connection: once more, on the other.
			retry = true
			code, d, err = send(replicas[(n+1)%2])
		}
		// kube-apiserver's restart: until answered, on both in turn.
		for i, deadline := 0, time.Now().Add(retryFor); (err != nil || code != http.StatusOK) && restart.active() &&
			time.Now().Before(deadline); i++ {
			retry = true
			time.Sleep(250 * time.Millisecond)
			code, d, err = send(replicas[(n+i)%2])
		}
		mu.Lock()
		defer mu.Unlock()
		total++
		if retry {
			retried++
		}
		if err != nil || code != http.StatusOK {
			errs++
			if len(errSamples) < 5 {
				errSamples = append(errSamples, fmt.Sprintf("%s: %d %v", path, code, err))
			}
			return
		}
		lat = append(lat, d)
	}

	// elevated sends user 0's request under g (retried once on the other
	// replica when cut, or while that replica's view of grants is not
	// current), and judges the answer against g's end.
	elevated = func(n int, g grant) {
		tok := (*tokens.Load())[0]
		send := func(r *replica) (int, string, time.Time, time.Time, error) {
			sent := time.Now()
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet,
				r.url+"/api/v1/namespaces/team-a/secrets?limit=50", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			g.header(req.Header)
			resp, err := client.Do(req)
			if err != nil {
				return 0, "", sent, time.Now(), err
			}
			got := time.Now()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			return resp.StatusCode, string(body), sent, got, nil
		}
		code, body, sent, got, err := send(replicas[n%2])
		retry := false
		if err != nil || code == http.StatusServiceUnavailable {
			retry = true
			code, body, sent, got, err = send(replicas[(n+1)%2])
		}
		// kube-apiserver's restart: until served or refused as ended (the
		// replicas' views are not current until their watches reconnect).
		for i, deadline := 0, time.Now().Add(retryFor); restart.active() && time.Now().Before(deadline) &&
			(err != nil || code != http.StatusOK && !(code == http.StatusForbidden &&
				strings.Contains(body, "expired at"))); i++ {
			retry = true
			time.Sleep(250 * time.Millisecond)
			code, body, sent, got, err = send(replicas[(n+i)%2])
		}
		if code == http.StatusOK && restart.back.Load() != 0 {
			restart.firstElevated.CompareAndSwap(0, got.UnixNano())
		}
		ok := err == nil && sudo.judge(g, sent, got, code, body)
		mu.Lock()
		defer mu.Unlock()
		total++
		if retry {
			retried++
		}
		if !ok {
			errs++
			if len(errSamples) < 5 {
				errSamples = append(errSamples, fmt.Sprintf("sudo %s: %d %v %.200s", g.name, code, err, body))
			}
			return
		}
		if code == http.StatusOK {
			lat = append(lat, got.Sub(sent))
		}
	}

	var samples []sample
	start := time.Now()
	if err := sudo.makeGrant(ctx); err != nil {
		return "", fmt.Errorf("making a sudo grant: %w", err)
	}
	everyGrant := time.NewTicker(grantEvery)
	defer everyGrant.Stop()
	var grantErr atomic.Pointer[error]
	tick := time.NewTicker(time.Second / time.Duration(o.rate))
	defer tick.Stop()
	every10 := time.NewTicker(10 * time.Second)
	defer every10.Stop()
	every30 := time.NewTicker(30 * time.Second)
	defer every30.Stop()
	rotated, restarted, outage, apiRestarted := false, false, false, false
	var apiBack atomic.Pointer[string]
	var restartErr atomic.Pointer[error]
	event := ""
	n := 0
	var wg sync.WaitGroup
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-tick.C:
			if inFlight.Load() >= 400 { // every loop bounded: the client's own cap
				continue
			}
			if v := inFlight.Add(1); v > peak.Load() {
				peak.Store(v)
			}
			n++
			wg.Add(1)
			go func(n int) { defer wg.Done(); request(n) }(n)
		case <-every30.C:
			if err := mint(); err != nil {
				return "", err
			}
		case <-everyGrant.C:
			if restart.active() {
				continue // the admin's requests would be cut too
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := sudo.makeGrant(ctx); err != nil && ctx.Err() == nil && !restart.active() {
					grantErr.Store(&err)
				}
			}()
		case <-every10.C:
			elapsed := time.Since(start)
			if !restarted && elapsed >= o.duration*2/5 {
				// In the background: the load goes on, and what reaches
				// replica 2 while it is down is retried on replica 1.
				restarted = true
				event = strings.TrimSpace(event + " replica 2 restarted")
				wg.Add(1)
				go func() {
					defer wg.Done()
					replicas[1].stop()
					if err := replicas[1].start(o.bin); err != nil {
						restartErr.Store(&err)
						return
					}
					if err := waitReady(client, replicas[1].url); err != nil {
						restartErr.Store(&err)
					}
				}()
			}
			if o.restartsAPIServer() && !apiRestarted && elapsed >= o.duration*4/5 {
				apiRestarted = true
				event = strings.TrimSpace(event + " kube-apiserver restarting")
				wg.Add(1)
				go func() {
					defer wg.Done()
					restart.on.Store(true)
					began := time.Now()
					out, err := exec.Command(o.restartAPIServer).CombinedOutput()
					restart.back.Store(time.Now().UnixNano())
					restart.until.Store(time.Now().Add(restartGrace).UnixNano())
					restart.on.Store(false)
					if err != nil {
						err = fmt.Errorf("%w: %s", err, out)
						restartErr.Store(&err)
					}
					msg := fmt.Sprintf("kube-apiserver ready again after %s", time.Since(began).Round(100*time.Millisecond))
					apiBack.Store(&msg)
				}()
			}
			if msg := apiBack.Swap(nil); msg != nil {
				event = strings.TrimSpace(event + " " + *msg)
			}
			switch {
			case !is.Down.Load() && !outage && elapsed >= o.duration*3/5:
				outage = true
				is.Down.Store(true)
				event = strings.TrimSpace(event + " provider down")
			case is.Down.Load() && elapsed >= o.duration*3/5+outageFor:
				is.Down.Store(false)
				event = strings.TrimSpace(event + " provider back")
			}
			if !rotated && elapsed >= o.duration/2 {
				rotated = true
				if err := is.Rotate(); err != nil {
					return "", err
				}
				if err := mint(); err != nil {
					return "", err
				}
				event = strings.TrimSpace(event + " signing key rotated")
			}
			mu.Lock()
			s := sample{at: elapsed.Round(time.Second), n: len(lat), errs: errs, retried: retried, event: event, inFlightPeak: peak.Swap(0)}
			s.p50, s.p99 = percentile(lat, 50), percentile(lat, 99)
			lat, errs, retried, event = nil, 0, 0, ""
			mu.Unlock()
			s.rss1, s.rss2 = rssMiB(replicas[0].pid()), rssMiB(replicas[1].pid())
			samples = append(samples, s)
		}
	}
	wg.Wait()
	if err := restartErr.Load(); err != nil {
		return "", fmt.Errorf("restarting replica 2 or kube-apiserver: %w", *err)
	}
	if err := grantErr.Load(); err != nil {
		return "", fmt.Errorf("making a sudo grant: %w", *err)
	}
	return summarize(o, samples, total, errSamples, sudo, restart)
}

func summarize(
	o options, samples []sample, total int, errSamples []string, sudo *sudoRun, restart *apiRestart,
) (string, error) {
	var b strings.Builder
	errs, retried := 0, 0
	for _, s := range samples {
		errs += s.errs
		retried += s.retried
	}
	fmt.Fprintf(&b, "Soak (hack/soak.sh, %s, %s): 2 replicas with --sudo, %d requests/s (get 40 %%, list 50 %%, watch 10 %%; 5 %% of them under a sudo grant) as %d users, tokens re-issued every 30 s, the signing key rotated at 1/2, replica 2 restarted at 2/5, the provider down for %s from 3/5, kube-apiserver restarted at 4/5, a %d s grant made every %s.\n\n",
		o.duration, time.Now().UTC().Format("2006-01-02"), o.rate, users, outageFor, grantSeconds, grantEvery)
	fmt.Fprintln(&b, "| t | requests | errors | retried | p50 ms | p99 ms | RSS replica 1 MiB | RSS replica 2 MiB | event |")
	fmt.Fprintln(&b, "| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, s := range samples {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %.1f | %.1f | %.1f | %.1f | %s |\n", s.at, s.n, s.errs, s.retried,
			ms(s.p50), ms(s.p99), s.rss1, s.rss2, s.event)
	}
	// The replica that ran throughout, after the warm-up (the first fifth).
	var xs, ys []float64
	for _, s := range samples {
		if s.at >= o.duration/5 && !math.IsNaN(s.rss1) {
			xs, ys = append(xs, s.at.Minutes()), append(ys, s.rss1)
		}
	}
	slope, growth := fit(xs, ys)
	fmt.Fprintf(&b, "\n%d requests, %d errors, %d retried after a restart cut them; replica 1's RSS after warm-up: slope %.2f MiB/min (bound %.1f), growth %.1f MiB (bound %.0f).\n",
		total, errs, retried, slope, maxSlopeMiBPerMin, growth, maxGrowthMiB)
	grants, served, expired, violations := sudo.counts()
	fmt.Fprintf(&b, "Sudo: %d grants; %d requests served under a live grant, %d refused as ended, %d served after "+
		"their grant's end or refused before it.\n", grants, served, expired, violations)
	var fails []string
	switch back, first := restart.back.Load(), restart.firstElevated.Load(); {
	case !o.restartsAPIServer():
	case back == 0:
		fails = append(fails, "kube-apiserver was not restarted: run longer")
	case first == 0:
		fails = append(fails, "nothing was served under a grant after kube-apiserver's restart")
	default:
		fmt.Fprintf(&b, "After kube-apiserver's restart, the first request under a grant was served %s after it "+
			"was ready (the replicas' watches of grants reconnected; until then such requests were answered 503 "+
			"and retried).\n", time.Duration(first-back).Round(100*time.Millisecond))
	}
	if violations > 0 {
		fails = append(fails, fmt.Sprintf("%d answers disagree with their grant's end (%s)", violations,
			strings.Join(sudo.violations[:min(5, len(sudo.violations))], "; ")))
	}
	if served == 0 || expired == 0 {
		fails = append(fails, "the run served nothing under a live grant, or refused nothing as ended: run longer")
	}
	if errs > 0 {
		fails = append(fails, fmt.Sprintf("%d errors (%s)", errs, strings.Join(errSamples, "; ")))
	}
	if len(xs) < 2 {
		fails = append(fails, "too few RSS samples after warm-up: run longer (SOAK_DURATION)")
	} else if slope > maxSlopeMiBPerMin || growth > maxGrowthMiB {
		fails = append(fails, fmt.Sprintf("RSS grows: %.2f MiB/min, %.1f MiB", slope, growth))
	}
	if len(fails) > 0 {
		return b.String(), errors.New(strings.Join(fails, "; "))
	}
	return b.String(), nil
}

// fit is the least-squares slope of ys over xs, and the growth from the
// first to the last sample.
func fit(xs, ys []float64) (slope, growth float64) {
	if len(xs) < 2 {
		return 0, 0
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(len(xs))
	my /= float64(len(xs))
	var num, den float64
	for i := range xs {
		num += (xs[i] - mx) * (ys[i] - my)
		den += (xs[i] - mx) * (xs[i] - mx)
	}
	if den > 0 {
		slope = num / den
	}
	return slope, ys[len(ys)-1] - ys[0]
}

func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func waitReady(c *http.Client, url string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := c.Get(url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready after 30 s", url)
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}
