// Package e2e tests the natsjobs console in a real browser: headless
// Chromium, driven with chromedp, clicks through a live embedded server.
// It is a module of its own so that chromedp is no dependency of natsjobs.
package e2e
