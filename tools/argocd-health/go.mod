// The Argo CD health script runner of the tests; gopher-lua is the Lua engine Argo CD embeds.
module gpucloud-operator/tools/argocd-health

go 1.26.0

require github.com/yuin/gopher-lua v1.1.2
