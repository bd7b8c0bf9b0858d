// Package cron parses cron specs and computes when they next fire.
package cron
