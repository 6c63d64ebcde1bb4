module example.com/go121

go 1.21
