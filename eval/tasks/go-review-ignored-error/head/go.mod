module example.com/conf

go 1.22
