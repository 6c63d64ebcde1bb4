// The tasks are repositories of their own, never part of the quavon module:
// this file keeps go build, vet, test and mod tidy out of them.
module quavon.invalid/eval-tasks

go 1.19
