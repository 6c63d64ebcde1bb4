module example.com/seq

go 1.22
