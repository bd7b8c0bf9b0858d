package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"
)

// With -only, the report replaces the selected suites' sections of the
// existing page and keeps every other section as an earlier run wrote it
// (notes added since included), so that one suite can be measured again
// without wiping the rest. The page is split at its level-2 headings
// ("## "), outside code blocks: a head, "Machine", "Suites", then one
// section per suite, titled by the suite's Title.

// A page is benchmarks.md split at its level-2 headings.
type page struct {
	head     []string // the lines above the first heading
	sections []pageSection
}

// A pageSection is a heading line and the lines up to the next heading.
type pageSection struct {
	title string // the heading without "## "
	line  int    // the heading's line number, from 1
	lines []string
}

func (pg *page) section(title string) (pageSection, bool) {
	for _, s := range pg.sections {
		if s.title == title {
			return s, true
		}
	}
	return pageSection{}, false
}

// parsePage splits a page the tool wrote. It fails on a page that does
// not start with the generated-code marker, a code block left open, or a
// heading that appears twice: splicing such a page could lose sections.
func parsePage(b []byte) (*page, error) {
	text := string(b)
	if !strings.HasPrefix(text, generatedMarker+"\n") {
		return nil, fmt.Errorf("it does not start with %q", generatedMarker)
	}
	pg := &page{}
	fence := 0 // line of the open code block's fence, 0 outside one
	for i, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		n := i + 1
		switch {
		case strings.HasPrefix(l, "```"):
			if fence == 0 {
				fence = n
			} else {
				fence = 0
			}
		case fence == 0 && strings.HasPrefix(l, "## "):
			title := strings.TrimSpace(strings.TrimPrefix(l, "## "))
			if prev, dup := pg.section(title); dup {
				return nil, fmt.Errorf("line %d: the heading %q appears again (first on line %d)", n, title, prev.line)
			}
			pg.sections = append(pg.sections, pageSection{title: title, line: n})
		}
		if k := len(pg.sections); k > 0 {
			pg.sections[k-1].lines = append(pg.sections[k-1].lines, l)
		} else {
			pg.head = append(pg.head, l)
		}
	}
	if fence != 0 {
		return nil, fmt.Errorf("line %d: a code block is never closed", fence)
	}
	return pg, nil
}

// checkSplice reports whether pg can take new sections of all: its head
// has the command block, it has the Machine and Suites sections, and every
// other section is a suite's. A heading that is no suite's (a suite
// renamed, a hand edit) would be lost by the splice, so it is an error.
func checkSplice(pg *page, all []suite) error {
	if headCommandEnd(pg.head) < 0 {
		return fmt.Errorf("its head has no ```sh block with the command that wrote it")
	}
	for _, want := range []string{"Machine", "Suites"} {
		if _, ok := pg.section(want); !ok {
			return fmt.Errorf("it has no %q section", "## "+want)
		}
	}
	for _, s := range pg.sections {
		if s.title == "Machine" || s.title == "Suites" {
			continue
		}
		if suiteByTitle(all, s.title) < 0 {
			return fmt.Errorf("line %d: the section %q is no suite's title in suites.go", s.line, s.title)
		}
	}
	return nil
}

func suiteByTitle(all []suite, title string) int {
	for i, s := range all {
		if s.Title == title {
			return i
		}
	}
	return -1
}

// headCommandEnd is the index of the line closing the head's first code
// block, or -1.
func headCommandEnd(head []string) int {
	open := -1
	for i, l := range head {
		switch {
		case open < 0 && l == "```sh":
			open = i
		case open >= 0 && strings.HasPrefix(l, "```"):
			return i
		}
	}
	return -1
}

// partialPrefix starts the head's paragraph on partial runs; the
// paragraph is the same for every run (partialNote), so that branches
// regenerating different suites never conflict over the head: each
// regenerated section and its row of the table of suites say when.
// Heads written by earlier versions named the last partial run
// (oldPartialPrefix); that paragraph is replaced.
const (
	partialPrefix    = "**Partial runs**"
	oldPartialPrefix = "**Last partial run**"
	partialNote      = partialPrefix + ": a section regenerated since the whole page was written (`-only`) says so " +
		"under its command, with its date, commit and load, and so does its row of the table of suites; the " +
		"machine table describes the run that wrote the whole page."
)

// writeSpliced writes the page rep's run makes of old: the sections of
// the suites selected by rep's run (selected(ID)) are rep's, in suite
// order, a selected suite the page lacked included; every other section,
// the machine table (which describes the run that wrote the whole page)
// and the other suites' rows of the table of suites stay as they are in
// old. The selected suites' rows and sections say when this run
// regenerated them; the head gets partialNote.
func writeSpliced(w io.Writer, rep *report, old *page, selected func(id string) bool) error {
	var buf bytes.Buffer
	p := &mdWriter{w: &buf}

	when := rep.Machine.Start.UTC().Format("2006-01-02 15:04 MST")
	var facts []string
	if rep.ReplayCommand != "" {
		facts = append(facts, "rendered from its saved output by `"+rep.ReplayCommand+"`")
	}
	if c := rep.Machine.Commit; c != "" {
		facts = append(facts, "commit `"+c+"`")
	}
	if d := rep.Machine.End.Sub(rep.Machine.Start).Round(time.Second); d > 0 {
		facts = append(facts, "the run took "+d.String())
	}
	if rep.Machine.LoadStart != "" {
		facts = append(facts, "load average at start "+rep.Machine.LoadStart+", at end "+rep.Machine.LoadEnd)
	}
	if rep.Quick {
		facts = append(facts, "**quick mode**: these numbers say nothing about performance")
	}
	about := ""
	if len(facts) > 0 {
		about = " (" + strings.Join(facts, "; ") + ")"
	}
	runLine := "Regenerated on " + when + " by `cd bench && " + rep.Command + "`" + about + "."

	// The head: old's without any partial-run paragraph, and the note
	// after the command block.
	var head []string
	for i := 0; i < len(old.head); i++ {
		if strings.HasPrefix(old.head[i], partialPrefix) || strings.HasPrefix(old.head[i], oldPartialPrefix) {
			if i+1 < len(old.head) && old.head[i+1] == "" {
				i++
			}
			continue
		}
		head = append(head, old.head[i])
	}
	end := headCommandEnd(head)
	writeLines(p, head[:end+1])
	p.line("")
	p.line(partialNote)
	writeLines(p, head[end+1:])

	machine, _ := old.section("Machine")
	writeLines(p, machine.lines)

	oldRows := suiteRows(old)
	p.line("## Suites")
	p.line("")
	p.line(suitesTableHead)
	for _, r := range rep.Runs {
		id := r.Suite.ID
		_, had := old.section(r.Suite.Title)
		switch row, ok := oldRows[id]; {
		case selected(id):
			p.line(suiteRowNote(r, "regenerated "+when+" with -only"))
		case ok:
			p.line(row)
		case had:
			p.line(fmt.Sprintf("| [%s](#%s) | measured by an earlier run | — | see its section |", id, anchor(r.Suite.Title)))
		}
	}
	p.line("")

	for _, r := range rep.Runs {
		if selected(r.Suite.ID) {
			writeSuite(p, rep, r, runLine)
		} else if s, ok := old.section(r.Suite.Title); ok {
			writeLines(p, s.lines)
		}
	}
	if p.err != nil {
		return p.err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func writeLines(p *mdWriter, lines []string) {
	for _, l := range lines {
		p.line(l)
	}
}

// suiteRows maps suite IDs to their rows in old's table of suites.
func suiteRows(old *page) map[string]string {
	rows := map[string]string{}
	s, _ := old.section("Suites")
	for _, l := range s.lines {
		rest, ok := strings.CutPrefix(l, "| [")
		if !ok {
			continue
		}
		if id, _, ok := strings.Cut(rest, "]"); ok {
			rows[id] = l
		}
	}
	return rows
}
