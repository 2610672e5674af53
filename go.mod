module lgflow

go 1.26.0

require (
	github.com/ebitengine/purego v0.11.3
	github.com/stretchr/testify v1.12.1
	golang.org/x/sys v0.49.0
	gonum.org/v1/gonum v0.17.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
