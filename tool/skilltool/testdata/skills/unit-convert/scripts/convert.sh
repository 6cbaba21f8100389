echo "converted $1 $2"
