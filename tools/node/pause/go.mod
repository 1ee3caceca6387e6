// The local node's sandbox (pause) image: one static binary, no dependencies.
module gpucloud-operator/tools/node/pause

go 1.26.0
