package console

import (
	_ "embed"
	"html/template"
)

// The pages' templates and their style sheet, which each page carries
// inline (no request for assets).
var (
	//go:embed console.html
	pagesHTML string
	//go:embed console.css
	styleCSS string

	templates = template.Must(template.New("").Funcs(template.FuncMap{
		"css":  func() template.CSS { return template.CSS(styleCSS) },
		"rate": formatRate,
	}).Parse(pagesHTML))
)
