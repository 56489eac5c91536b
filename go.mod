module github.com/grove-dev/grove

go 1.26.8
