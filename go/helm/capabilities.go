package helm

import (
	"fmt"
	"regexp"
	"runtime"
	"strconv"
	"strings"
)

// The Kubernetes version and Helm version `helm template` reports when no cluster is asked: Helm
// 3.21.4's release build, whose client-go (v0.36) makes it default to Kubernetes v1.36.0.
const (
	defaultKubeMajor = "1"
	defaultKubeMinor = "36"
	helmVersion      = "v3.21.4"
)

// KubeVersion is .Capabilities.KubeVersion.
type KubeVersion struct {
	Version string
	Major   string
	Minor   string
}

// String is the version as "v1.36.0".
func (kv *KubeVersion) String() string { return kv.Version }

// GitVersion is the version as "v1.36.0" (Helm 2's name for it).
func (kv *KubeVersion) GitVersion() string { return kv.Version }

// VersionSet is .Capabilities.APIVersions.
type VersionSet []string

// Has tells whether an API version ("apps/v1", or "apps/v1/Deployment") is available.
func (v VersionSet) Has(apiVersion string) bool {
	for _, x := range v {
		if x == apiVersion {
			return true
		}
	}
	return false
}

// BuildInfo is .Capabilities.HelmVersion.
type BuildInfo struct {
	Version      string `json:"version,omitempty"`
	GitCommit    string `json:"git_commit,omitempty"`
	GitTreeState string `json:"git_tree_state,omitempty"`
	GoVersion    string `json:"go_version,omitempty"`
}

// Capabilities is .Capabilities.
type Capabilities struct {
	KubeVersion KubeVersion
	APIVersions VersionSet
	HelmVersion BuildInfo
}

// defaultAPIVersions are what a Helm 3.21.4 release build reports when it renders without a
// cluster: the group versions of its client-go (v0.36) scheme in the scheme's priority order
// (each group's preferred version first, groups in the order they were registered), then the
// apiextensions versions Helm adds. Templates can print the list (`toJson`), so its order and
// its members are Helm's; test/helm-oracle compares them.
var defaultAPIVersions = VersionSet{
	"v1",
	"admissionregistration.k8s.io/v1", "admissionregistration.k8s.io/v1alpha1", "admissionregistration.k8s.io/v1beta1",
	"internal.apiserver.k8s.io/v1alpha1",
	"apps/v1", "apps/v1beta1", "apps/v1beta2",
	"authentication.k8s.io/v1", "authentication.k8s.io/v1alpha1", "authentication.k8s.io/v1beta1",
	"authorization.k8s.io/v1", "authorization.k8s.io/v1beta1",
	"autoscaling/v1", "autoscaling/v2",
	"batch/v1", "batch/v1beta1",
	"certificates.k8s.io/v1", "certificates.k8s.io/v1beta1", "certificates.k8s.io/v1alpha1",
	"coordination.k8s.io/v1alpha2", "coordination.k8s.io/v1beta1", "coordination.k8s.io/v1",
	"discovery.k8s.io/v1", "discovery.k8s.io/v1beta1",
	"events.k8s.io/v1", "events.k8s.io/v1beta1",
	"extensions/v1beta1",
	"flowcontrol.apiserver.k8s.io/v1", "flowcontrol.apiserver.k8s.io/v1beta1", "flowcontrol.apiserver.k8s.io/v1beta2", "flowcontrol.apiserver.k8s.io/v1beta3",
	"networking.k8s.io/v1", "networking.k8s.io/v1beta1",
	"node.k8s.io/v1", "node.k8s.io/v1alpha1", "node.k8s.io/v1beta1",
	"policy/v1", "policy/v1beta1",
	"rbac.authorization.k8s.io/v1", "rbac.authorization.k8s.io/v1beta1", "rbac.authorization.k8s.io/v1alpha1",
	"resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1", "resource.k8s.io/v1alpha3",
	"scheduling.k8s.io/v1alpha2", "scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1",
	"storage.k8s.io/v1beta1", "storage.k8s.io/v1", "storage.k8s.io/v1alpha1",
	"storagemigration.k8s.io/v1beta1",
	"apiextensions.k8s.io/v1beta1", "apiextensions.k8s.io/v1",
}

// DefaultCapabilities are `helm template`'s capabilities, with extra API versions appended
// (--api-versions) and the Kubernetes version replaced when kubeVersion is not "" (--kube-version).
func DefaultCapabilities(kubeVersion string, apiVersions []string) (*Capabilities, error) {
	caps := &Capabilities{
		KubeVersion: KubeVersion{Version: "v" + defaultKubeMajor + "." + defaultKubeMinor + ".0", Major: defaultKubeMajor, Minor: defaultKubeMinor},
		APIVersions: append(append(VersionSet{}, defaultAPIVersions...), apiVersions...),
		HelmVersion: BuildInfo{Version: helmVersion, GoVersion: runtime.Version()},
	}
	if kubeVersion != "" {
		kv, err := ParseKubeVersion(kubeVersion)
		if err != nil {
			return nil, fmt.Errorf("invalid kube version '%s': %s", kubeVersion, err)
		}
		caps.KubeVersion = *kv
	}
	return caps, nil
}

var genericVersion = regexp.MustCompile(`^\s*v?([0-9]+(?:\.[0-9]+)*)(.*)*$`)

// ParseKubeVersion reads a Kubernetes version the way Kubernetes' generic version parser does:
// at least major.minor, an optional leading 'v', anything after the numbers ignored.
func ParseKubeVersion(s string) (*KubeVersion, error) {
	m := genericVersion.FindStringSubmatch(s)
	if m == nil {
		return nil, fmt.Errorf("could not parse %q as version", s)
	}
	parts := strings.Split(m[1], ".")
	if len(parts) < 2 {
		return nil, fmt.Errorf("version %q has only %d components (need at least 2)", s, len(parts))
	}
	nums := make([]string, len(parts))
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 10, 0)
		if err != nil {
			return nil, fmt.Errorf("illegal version string %q", s)
		}
		nums[i] = strconv.FormatUint(n, 10)
	}
	return &KubeVersion{Version: "v" + strings.Join(nums, "."), Major: nums[0], Minor: nums[1]}, nil
}
