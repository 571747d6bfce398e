package stack

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"

	"github.com/chromedp/chromedp"
)

// chromiumNames are the executables of Debian's chromium package and of
// other Chromium/Chrome installs.
var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Chromium returns the path of a Chromium (or Chrome) executable;
// GITOPS_SERVICE_CHROMIUM overrides the lookup.
func Chromium() (string, error) {
	if p := os.Getenv("GITOPS_SERVICE_CHROMIUM"); p != "" {
		return p, nil
	}
	for _, n := range chromiumNames {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no Chromium on PATH (looked for " + strings.Join(chromiumNames, ", ") +
		"); hack/install-deps.sh installs Debian's chromium")
}

// NewBrowser starts a headless Chromium with a fresh profile in profileDir (no
// cookies shared with another browser) and returns a chromedp context for it;
// cancel stops it. The flags keep it from calling home and from needing a GPU or
// a sandbox (tests run as root in containers).
func NewBrowser(ctx context.Context, profileDir string) (context.Context, context.CancelFunc, error) {
	path, err := Chromium()
	if err != nil {
		return nil, nil, err
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(profileDir),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1600, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	// Start the browser now, so a missing library fails here and not in a test step.
	if err := chromedp.Run(bctx); err != nil {
		cancelBrowser()
		cancelAlloc()
		return nil, nil, err
	}
	return bctx, func() { cancelBrowser(); cancelAlloc() }, nil
}
