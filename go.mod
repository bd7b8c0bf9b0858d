module github.com/ttlkit/ttlkit

go 1.25
