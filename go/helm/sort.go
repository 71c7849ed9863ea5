package helm

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// Manifest is one rendered document.
type Manifest struct {
	// Source is the template that produced it (chart/templates/x.yaml), as in "# Source:" lines.
	Source  string
	Content string
	Head    SimpleHead
}

// SimpleHead is what sorting reads of a document.
type SimpleHead struct {
	Version  string `json:"apiVersion"`
	Kind     string `json:"kind,omitempty"`
	Metadata *struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata,omitempty"`
}

// Hook is a document annotated helm.sh/hook with known events.
type Hook struct {
	Manifest
	Events []string
	Weight int
}

// hookEvents are the helm.sh/hook values Helm knows ("test-success" is an old name of "test").
var hookEvents = map[string]string{
	"pre-install": "pre-install", "post-install": "post-install",
	"pre-delete": "pre-delete", "post-delete": "post-delete",
	"pre-upgrade": "pre-upgrade", "post-upgrade": "post-upgrade",
	"pre-rollback": "pre-rollback", "post-rollback": "post-rollback",
	"test": "test", "test-success": "test",
}

// installOrder is the kind order of an install; kinds not listed come after, by name.
var installOrder = []string{
	"PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy",
	"PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList", "ConfigMap", "StorageClass",
	"PersistentVolume", "PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole",
	"ClusterRoleList", "ClusterRoleBinding", "ClusterRoleBindingList", "Role", "RoleList",
	"RoleBinding", "RoleBindingList", "Service", "DaemonSet", "Pod", "ReplicationController",
	"ReplicaSet", "Deployment", "HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob",
	"IngressClass", "Ingress", "APIService",
}

var kindRank = func() map[string]int {
	m := map[string]int{}
	for i, k := range installOrder {
		m[k] = i
	}
	return m
}()

func lessByKind(a, b string) bool {
	ra, aok := kindRank[a]
	rb, bok := kindRank[b]
	switch {
	case !aok && !bok:
		if a != b {
			return a < b
		}
		return false
	case !aok:
		return false
	case !bok:
		return true
	}
	return ra < rb
}

var docSeparator = regexp.MustCompile("(?:^|\\s*\n)---\\s*")

// SplitManifests cuts a rendered file into its YAML documents, in order, trimmed, empty ones
// dropped.
func SplitManifests(s string) []string {
	out := []string{}
	for _, d := range docSeparator.Split(strings.TrimSpace(s), -1) {
		if d == "" {
			continue
		}
		out = append(out, strings.TrimSpace(d))
	}
	return out
}

// sortManifests splits the rendered files (sorted by name; partials and blank files skipped) into
// documents, separates hooks, and orders both by kind (stable, so file order breaks ties).
func sortManifests(files map[string]string) ([]Hook, []Manifest, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var hooks []Hook
	var generic []Manifest
	for _, name := range names {
		content := files[name]
		if strings.HasPrefix(path.Base(name), "_") || strings.TrimSpace(content) == "" {
			continue
		}
		for _, doc := range SplitManifests(content) {
			var head SimpleHead
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				// The message names the Go type decoded into; Helm's is releaseutil.SimpleHead.
				msg := strings.Replace(err.Error(), "Go value of type helm.SimpleHead", "Go value of type releaseutil.SimpleHead", 1)
				return hooks, generic, fmt.Errorf("YAML parse error on %s: %s", name, msg)
			}
			m := Manifest{Source: name, Content: doc, Head: head}
			if head.Metadata == nil || len(head.Metadata.Annotations) == 0 {
				generic = append(generic, m)
				continue
			}
			types, ok := head.Metadata.Annotations["helm.sh/hook"]
			if !ok {
				generic = append(generic, m)
				continue
			}
			weight, err := strconv.Atoi(head.Metadata.Annotations["helm.sh/hook-weight"])
			if err != nil {
				weight = 0
			}
			h := Hook{Manifest: m, Weight: weight, Events: []string{}}
			known := true
			for _, t := range strings.Split(types, ",") {
				e, ok := hookEvents[strings.ToLower(strings.TrimSpace(t))]
				if !ok {
					known = false
					break
				}
				h.Events = append(h.Events, e)
			}
			if !known {
				// Helm skips a document with an unknown hook.
				continue
			}
			hooks = append(hooks, h)
		}
	}
	sort.SliceStable(generic, func(i, j int) bool { return lessByKind(generic[i].Head.Kind, generic[j].Head.Kind) })
	sort.SliceStable(hooks, func(i, j int) bool { return lessByKind(hooks[i].Head.Kind, hooks[j].Head.Kind) })
	return hooks, generic, nil
}

func (h Hook) isTest() bool {
	for _, e := range h.Events {
		if e == "test" {
			return true
		}
	}
	return false
}

// yamlHead reads the head of the first document of a file; false when it is not YAML.
func yamlHead(data []byte, head *SimpleHead) bool {
	docs := SplitManifests(string(data))
	if len(docs) == 0 {
		return false
	}
	return yaml.Unmarshal([]byte(docs[0]), head) == nil
}
