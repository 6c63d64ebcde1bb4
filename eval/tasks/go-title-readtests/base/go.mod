module example.com/caps

go 1.19
