// chart_render renders a Helm chart the way `helm template` does, for machines where Helm itself
// cannot be installed: Go's text/template with the Sprig function library (the engine and the
// functions Helm uses), Helm's own template functions (include, tpl, required, fail, toYaml,
// fromYaml, toJson), values.yaml deep-merged with the -f files in order, and .Release, .Chart
// and .Capabilities as Helm fills them. Templates are every file under templates/; those whose
// names start with "_" only define named templates; the rest are rendered, each document
// headed by "# Source: CHART/templates/FILE" as helm template writes it.
//
// Usage: chart_render [-f values.yaml]... [--name NAME] [--namespace NS] CHART_DIR
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"gopkg.in/yaml.v2"
)

type valueFiles []string

func (v *valueFiles) String() string     { return strings.Join(*v, ",") }
func (v *valueFiles) Set(s string) error { *v = append(*v, s); return nil }

// YAML maps come as map[interface{}]interface{}; templates and JSON want string keys.
func normalize(v interface{}) interface{} {
	switch t := v.(type) {
	case map[interface{}]interface{}:
		m := map[string]interface{}{}
		for k, x := range t {
			m[fmt.Sprint(k)] = normalize(x)
		}
		return m
	case []interface{}:
		for i := range t {
			t[i] = normalize(t[i])
		}
	}
	return v
}

func readValues(path string) (map[string]interface{}, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raw interface{}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if raw == nil {
		return map[string]interface{}{}, nil
	}
	m, ok := normalize(raw).(map[string]interface{})
	if !ok {
		return nil, fmt.Errorf("%s: not a map", path)
	}
	return m, nil
}

// Helm's coalescing: maps merge key by key, anything else given later replaces; null deletes.
func merge(dst, src map[string]interface{}) {
	for k, v := range src {
		if v == nil {
			delete(dst, k)
			continue
		}
		if sm, ok := v.(map[string]interface{}); ok {
			if dm, ok := dst[k].(map[string]interface{}); ok {
				merge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

// .Files: the chart's files by their path in the chart (a symlink is followed, as Helm's loader does).
type chartFiles struct{ dir string }

func (f chartFiles) Get(name string) string {
	data, err := os.ReadFile(filepath.Join(f.dir, name))
	if err != nil {
		return ""
	}
	return string(data)
}

func toYaml(v interface{}) string {
	out, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(out), "\n")
}

func main() {
	var files valueFiles
	flag.Var(&files, "f", "a values file (repeatable; later ones win)")
	name := flag.String("name", "perfscope", "the release name")
	namespace := flag.String("namespace", "perfscope", "the release namespace")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: chart_render [-f values.yaml]... CHART_DIR")
		os.Exit(2)
	}
	if err := render(flag.Arg(0), files, *name, *namespace); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func render(dir string, files []string, name, namespace string) error {
	chart, err := readValues(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return err
	}
	values, err := readValues(filepath.Join(dir, "values.yaml"))
	if err != nil {
		return err
	}
	for _, f := range files {
		more, err := readValues(f)
		if err != nil {
			return err
		}
		merge(values, more)
	}
	chartName := fmt.Sprint(chart["name"])
	top := map[string]interface{}{
		"Values":       values,
		"Release":      map[string]interface{}{"Name": name, "Namespace": namespace, "Service": "Helm", "IsInstall": true, "IsUpgrade": false, "Revision": 1},
		"Chart":        map[string]interface{}{"Name": chartName, "Version": chart["version"], "AppVersion": chart["appVersion"]},
		"Files":        chartFiles{dir},
		"Capabilities": map[string]interface{}{"KubeVersion": map[string]interface{}{"Version": "v1.30.0", "Major": "1", "Minor": "30"}},
	}

	root := template.New(chartName)
	funcs := sprig.TxtFuncMap()
	delete(funcs, "env")
	delete(funcs, "expandenv")
	funcs["toYaml"] = toYaml
	funcs["fromYaml"] = func(s string) map[string]interface{} {
		var raw interface{}
		if err := yaml.Unmarshal([]byte(s), &raw); err != nil {
			return map[string]interface{}{"Error": err.Error()}
		}
		m, _ := normalize(raw).(map[string]interface{})
		return m
	}
	funcs["toJson"] = func(v interface{}) string { b, _ := json.Marshal(v); return string(b) }
	funcs["required"] = func(msg string, v interface{}) (interface{}, error) {
		if v == nil || v == "" {
			return nil, errors.New(msg)
		}
		return v, nil
	}
	funcs["fail"] = func(msg string) (string, error) { return "", errors.New(msg) }
	funcs["include"] = func(n string, data interface{}) (string, error) {
		var buf bytes.Buffer
		err := root.ExecuteTemplate(&buf, n, data)
		return buf.String(), err
	}
	funcs["tpl"] = func(text string, data interface{}) (string, error) {
		t, err := root.Clone()
		if err != nil {
			return "", err
		}
		t, err = t.New("tpl").Parse(text)
		if err != nil {
			return "", err
		}
		var buf bytes.Buffer
		err = t.Execute(&buf, data)
		return buf.String(), err
	}
	root.Funcs(funcs).Option("missingkey=zero")

	var names []string
	err = filepath.Walk(filepath.Join(dir, "templates"), func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		names = append(names, p)
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, p := range names {
		text, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if _, err := root.New(chartName + "/" + rel).Parse(string(text)); err != nil {
			return err
		}
	}
	var out strings.Builder
	for _, p := range names {
		rel, _ := filepath.Rel(dir, p)
		base := filepath.Base(p)
		if strings.HasPrefix(base, "_") || !(strings.HasSuffix(base, ".yaml") || strings.HasSuffix(base, ".tpl")) {
			continue
		}
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, chartName+"/"+rel, top); err != nil {
			return err
		}
		// Helm leaves out what renders to whitespace and comments only.
		body := strings.TrimSpace(buf.String())
		empty := true
		for _, line := range strings.Split(body, "\n") {
			l := strings.TrimSpace(line)
			if l != "" && !strings.HasPrefix(l, "#") && l != "---" {
				empty = false
				break
			}
		}
		if empty {
			continue
		}
		out.WriteString("---\n# Source: " + chartName + "/" + rel + "\n" + body + "\n")
	}
	_, err = os.Stdout.WriteString(out.String())
	return err
}
