module github.com/herrscher/herrscher-state/clients/go

go 1.19
