-- The fleet's database (the tests keep using the database "test").
CREATE DATABASE driftwave;
