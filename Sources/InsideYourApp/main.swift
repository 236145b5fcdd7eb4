// Compiled, never run: the article's examples need the application's database.
print("see InsideYourApp.md in the DocC catalog")
